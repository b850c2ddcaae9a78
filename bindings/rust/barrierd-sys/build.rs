// SPDX-License-Identifier: MIT
//! Finds libbarrierd with the `pkg-config` program (no crates.io helper: the crates build
//! offline with Debian's toolchain).  PKG_CONFIG_PATH may point at a build tree's
//! `lib/pkgconfig`, whose uninstalled `barrierd.pc` names the tree's library and the source
//! headers.
use std::env;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    for var in [
        "PKG_CONFIG",
        "PKG_CONFIG_PATH",
        "PKG_CONFIG_LIBDIR",
        "PKG_CONFIG_SYSROOT_DIR",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    // Miri cannot call foreign functions: nothing is linked, so no library is needed.
    if env::var_os("CARGO_CFG_MIRI").is_some() {
        return;
    }
    let pkg_config = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let out = match Command::new(&pkg_config)
        .args(["--libs", "--cflags", "barrierd"])
        .output()
    {
        Ok(out) => out,
        Err(e) => fail(&format!("cannot run `{pkg_config}`: {e}")),
    };
    if !out.status.success() {
        fail(&format!(
            "`{pkg_config} --libs --cflags barrierd` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let flags = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut include = Vec::new();
    for flag in flags.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
            // An uninstalled library is not on the loader's path: the tests' and examples'
            // binaries find it through this run path (LD_LIBRARY_PATH works as well).
            println!("cargo:libdir={dir}");
        } else if let Some(lib) = flag.strip_prefix("-l") {
            println!("cargo:rustc-link-lib=dylib={lib}");
        } else if let Some(dir) = flag.strip_prefix("-I") {
            include.push(dir.to_string());
        }
    }
    // For the ABI test, which compiles the header against these declarations.
    println!(
        "cargo:rustc-env=BARRIERD_SYS_CFLAGS={}",
        include_flags(&include)
    );
    println!("cargo:include={}", include.join(":"));
}

fn include_flags(dirs: &[String]) -> String {
    dirs.iter()
        .map(|d| format!("-I{d}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn fail(why: &str) -> ! {
    eprintln!(
        "barrierd-sys: {why}\n\
         Install libbarrierd (its barrierd.pc), or build barrierd and set\n\
         PKG_CONFIG_PATH=<build tree>/lib/pkgconfig (bindings/rust/README.md)."
    );
    std::process::exit(1);
}
