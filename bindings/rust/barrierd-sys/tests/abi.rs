// SPDX-License-Identifier: MIT
//! The hand-written declarations against the C headers, judged by the C compiler:
//!
//! * every function of the `extern "C"` block in src/lib.rs, read back from the source and
//!   translated to a C function type, must have exactly the type of the header's declaration
//!   (`__builtin_types_compatible_p`: parameter and return types, pointer constness);
//! * that block must name exactly the `barrierd_*` symbols the library exports (`nm -D`);
//! * every struct's size, alignment and field offsets must be the C compiler's (and its
//!   fields, as src/layout.rs lists them, all compared);
//! * every constant must equal the header's macro or enumerator of the same name.
//!
//! The C program is compiled (`$CC`, else `cc`) with the include flags that build.rs got from
//! pkg-config, and run; a mismatch fails the compile (static assertions) or the run, naming
//! the item.  Not under Miri, which runs no C compiler (and build.rs then asks no pkg-config).
#![cfg(not(miri))]
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::mem::{align_of, size_of, MaybeUninit};
use std::path::{Path, PathBuf};
use std::process::Command;

use barrierd_sys::*;

/// (C struct name, size, alignment, [(field, offset)]), computed by rustc.
struct Layout {
    name: &'static str,
    size: usize,
    align: usize,
    fields: Vec<(&'static str, usize)>,
}

macro_rules! layout {
    ($ty:ident { $($field:ident),* $(,)? }) => {{
        let u = MaybeUninit::<$ty>::uninit();
        let base = u.as_ptr();
        Layout {
            name: stringify!($ty),
            size: size_of::<$ty>(),
            align: align_of::<$ty>(),
            // SAFETY: addr_of! on a field of an uninitialised value reads nothing.
            fields: vec![$((stringify!($field),
                unsafe { std::ptr::addr_of!((*base).$field) } as usize - base as usize)),*],
        }
    }};
}

fn layouts() -> Vec<Layout> {
    vec![
        layout!(barrierd_cpu {
            last_interrupt_ns,
            last_interrupt_vtime
        }),
        layout!(barrierd_header {
            ncpu,
            vtime,
            last_interrupt_ns,
            last_interrupt_vtime,
            magic,
            abi_major,
            abi_minor,
            header_size,
            cpu_stride,
            flags,
            generation,
            heartbeat_ns,
            heartbeat_period_ns,
            daemon_pid,
            boot_id,
            doorbell,
            ext_offset,
            per_cpu
        }),
        layout!(barrierd_ext_cpu {
            state,
            credit_event,
            credit_idle,
            credit_offline
        }),
        layout!(barrierd_ext {
            ext_size,
            ext_header_size,
            ext_cpu_stride,
            last_advance_ns,
            last_advance_cause,
            passes,
            credit_passes,
            doorbell_rings,
            stop_ns,
            stop_vtime,
            served_ns,
            nudges,
            reserved,
            cpu
        }),
        layout!(barrierd_slots_msg {
            magic,
            slot_abi,
            slot_size,
            ncpu,
            generation,
            nlinks,
            reserved
        }),
        layout!(barrierd_open_opts {
            sz,
            trusted_uid_set,
            trusted_uid,
            fallback,
            fallback_after_ns,
            flags
        }),
        layout!(barrierd_ec {
            word,
            flags,
            reserved
        }),
        layout!(barrierd_epoch_record { active, global }),
        layout!(barrierd_hp_record { hp }),
    ]
}

fn manifest_file(rel: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The field names of each `pub struct` in src/layout.rs, to check that `layouts()` lists
/// them all.
fn source_fields() -> Vec<(String, Vec<String>)> {
    let src = manifest_file("src/layout.rs");
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut current: Option<(String, Vec<String>)> = None;
    for line in src.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("pub struct ") {
            current = Some((rest.trim_end_matches(" {").to_string(), Vec::new()));
        } else if line == "}" {
            out.extend(current.take());
        } else if let (Some((_, fields)), Some(rest)) =
            (current.as_mut(), line.strip_prefix("pub "))
        {
            fields.push(rest.split(':').next().unwrap().to_string());
        }
    }
    out
}

/// A Rust type of the extern block, as a C type name.
fn c_type(rust: &str) -> String {
    let rust = rust.trim();
    if let Some(inner) = rust.strip_prefix("*mut ") {
        return format!("{} *", c_type(inner));
    }
    if let Some(inner) = rust.strip_prefix("*const ") {
        return format!("{} const *", c_type(inner));
    }
    match rust {
        "c_int" => "int".into(),
        "c_uint" => "unsigned int".into(),
        "c_char" => "char".into(),
        "c_void" => "void".into(),
        "u64" => "uint64_t".into(),
        "i64" => "int64_t".into(),
        "u32" => "uint32_t".into(),
        "usize" => "size_t".into(),
        "bool" => "bool".into(),
        "uid_t" => "uid_t".into(),
        "()" => "void".into(),
        // The crate's function-pointer aliases: typedefs emitted from their definitions.
        t if t.ends_with("_fn") => t.into(),
        t if t.starts_with("barrierd") => format!("struct {t}"),
        t => panic!("abi test: no C spelling for the Rust type `{t}`"),
    }
}

/// Split at top-level commas (not inside parentheses or angle brackets).
fn split_args(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0i32);
    for ch in s.chars() {
        match ch {
            '(' | '<' => depth += 1,
            ')' | '>' if !cur.ends_with('-') => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    if !cur.trim().is_empty() {
        out.push(cur);
    }
    out.into_iter().map(|a| a.trim().to_string()).collect()
}

/// "(a: T, b: U) -> R" as (C return type, [C parameter types]).
fn c_signature(params_and_ret: &str) -> (String, Vec<String>) {
    let open = params_and_ret.find('(').expect("(");
    let mut depth = 0;
    let mut close = open;
    for (i, ch) in params_and_ret.char_indices().skip(open) {
        match ch {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    close = i;
                    break;
                }
            }
            _ => {}
        }
    }
    let params = split_args(&params_and_ret[open + 1..close])
        .iter()
        .map(|p| c_type(p.split_once(':').map_or(p.as_str(), |(_, t)| t)))
        .collect();
    let ret = params_and_ret[close + 1..]
        .trim()
        .strip_prefix("->")
        .map_or("void".to_string(), c_type);
    (ret, params)
}

fn join_params(params: &[String]) -> String {
    if params.is_empty() {
        "void".into()
    } else {
        params.join(", ")
    }
}

/// A function of the extern block, in C: its name, return type and parameter types.
struct CFn {
    name: String,
    ret: String,
    params: Vec<String>,
}

/// The declarations of src/lib.rs, comments dropped and joined, and the function-pointer
/// aliases as C typedefs.
fn rust_declarations() -> (Vec<CFn>, Vec<String>) {
    let src = manifest_file("src/lib.rs");
    let code: String = src
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//"))
        .collect::<Vec<_>>()
        .join(" ");
    let mut typedefs = Vec::new();
    for decl in code.split(';') {
        let decl = decl.trim();
        if let Some(rest) = decl.split("pub type ").nth(1) {
            let (name, def) = rest.split_once('=').unwrap();
            // rustfmt may break the alias over lines: "Option<\n fn(..),\n>".
            let def = def
                .replace("< ", "<")
                .replace(", >", ">")
                .replace(" >", ">");
            if let Some(f) = def.trim().strip_prefix("Option<unsafe extern \"C\" fn") {
                let (ret, params) = c_signature(f.strip_suffix('>').unwrap());
                typedefs.push(format!(
                    "typedef {ret} (*{})({});",
                    name.trim(),
                    join_params(&params)
                ));
            } else {
                assert!(
                    !def.contains("fn("),
                    "abi test: cannot read the alias {name}"
                );
            }
        }
    }
    let block = code
        .split("extern \"C\" {")
        .nth(1)
        .expect("an extern \"C\" block");
    let block = &block[..block.find(" }").expect("the block's end")];
    let mut fns = Vec::new();
    for decl in block.split(';').map(str::trim).filter(|d| !d.is_empty()) {
        let rest = decl
            .strip_prefix("pub fn ")
            .unwrap_or_else(|| panic!("not a fn: {decl}"));
        let name = rest[..rest.find('(').unwrap()].trim().to_string();
        let (ret, params) = c_signature(&rest[name.len()..]);
        fns.push(CFn { name, ret, params });
    }
    (fns, typedefs)
}

fn pkg_config(args: &[&str]) -> String {
    let pc = std::env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into());
    let out = Command::new(&pc)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{pc}: {e}"));
    assert!(out.status.success(), "{pc} {args:?} failed");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn exported_symbols() -> BTreeSet<String> {
    let lib = PathBuf::from(pkg_config(&["--variable=libdir", "barrierd"])).join("libbarrierd.so");
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
        .unwrap_or_else(|e| panic!("nm: {e}"));
    assert!(out.status.success(), "nm -D {} failed", lib.display());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .map(|s| s.split('@').next().unwrap().to_string())
        .filter(|s| s.starts_with("barrierd_"))
        .collect()
}

fn c_program() -> String {
    let mut c = String::from(
        "#include <errno.h>\n#include <stdio.h>\n#include <string.h>\n#include <barrierd.h>\n\
         #include <barrierd_ec.h>\n#include <barrierd_reclaim.h>\n",
    );
    let (fns, typedefs) = rust_declarations();
    for t in &typedefs {
        writeln!(c, "{t}").unwrap();
    }
    for CFn { name, ret, params } in &fns {
        let ty = format!("{ret} ({})", join_params(params));
        writeln!(
            c,
            "_Static_assert(__builtin_types_compatible_p(__typeof__({name}), {ty}), \
             \"{name}: the Rust declaration is {ty}\");"
        )
        .unwrap();
    }
    for l in layouts() {
        let s = format!("struct {}", l.name);
        writeln!(
            c,
            "_Static_assert(sizeof({s}) == {}, \"sizeof {s}\");",
            l.size
        )
        .unwrap();
        writeln!(
            c,
            "_Static_assert(_Alignof({s}) == {}, \"_Alignof {s}\");",
            l.align
        )
        .unwrap();
        for (f, off) in &l.fields {
            writeln!(
                c,
                "_Static_assert(offsetof({s}, {f}) == {off}, \"offsetof {s}.{f}\");"
            )
            .unwrap();
        }
    }
    for (name, value) in ABI_CONSTANTS {
        writeln!(
            c,
            "_Static_assert((unsigned long long)({name}) == {value}ULL, \"{name} is {value}\");"
        )
        .unwrap();
    }
    c.push_str("int main(void)\n{\n\tint bad = 0;\n");
    for (name, value) in ABI_STRINGS {
        writeln!(
            c,
            "\tif (strcmp({name}, \"{value}\")) {{ printf(\"{name}: C \\\"%s\\\", Rust \\\"{value}\\\"\\n\", {name}); bad = 1; }}"
        )
        .unwrap();
    }
    c.push_str("\treturn bad;\n}\n");
    c
}

#[test]
fn layouts_list_every_field_of_the_source() {
    let listed: Vec<(String, Vec<String>)> = layouts()
        .iter()
        .map(|l| {
            (
                l.name.to_string(),
                l.fields.iter().map(|f| f.0.to_string()).collect(),
            )
        })
        .collect();
    assert_eq!(listed, source_fields());
}

#[test]
fn extern_block_names_every_exported_function() {
    let declared: BTreeSet<String> = rust_declarations().0.into_iter().map(|f| f.name).collect();
    let exported = exported_symbols();
    assert!(!exported.is_empty());
    assert_eq!(
        declared, exported,
        "the extern block and libbarrierd's exported symbols differ"
    );
}

#[test]
fn c_compiler_agrees_with_every_declaration() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let src = dir.join("barrierd_sys_abi.c");
    let exe = dir.join("barrierd_sys_abi");
    std::fs::write(&src, c_program()).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args(["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(&src)
        .args(env!("BARRIERD_SYS_CFLAGS").split_whitespace())
        .output()
        .unwrap_or_else(|e| panic!("{cc}: {e}"));
    assert!(
        out.status.success(),
        "{} does not compile: the declarations differ from the headers:\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().unwrap();
    assert!(
        run.status.success(),
        "string constants differ:\n{}",
        String::from_utf8_lossy(&run.stdout)
    );
}

#[test]
fn translation_of_rust_types_to_c() {
    assert_eq!(c_type("*mut *mut barrierd"), "struct barrierd * *");
    assert_eq!(c_type("*const c_char"), "char const *");
    let (ret, params) = c_signature("(a: *mut barrierd, f: barrierd_free_fn) -> c_int");
    assert_eq!((ret.as_str(), params.len()), ("int", 2));
    assert_eq!(c_signature("()").0, "void");
}
