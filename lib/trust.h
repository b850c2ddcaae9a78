/* SPDX-License-Identifier: MIT */
/*
 * Trusting the state file and the socket beside it: by their owners' path walk (lib/trust.c),
 * or, where owners are unmapped, by the daemon's anchor (lib/anchor.c).
 */
#ifndef BARRIERD_LIB_TRUST_H
#define BARRIERD_LIB_TRUST_H

#include <barrierd.h>
#include <sys/types.h>

/*
 * Path trust (docs/PROTOCOL.md, "Trusting the file"): -EPERM with no bytes of the file
 * trusted, or an open fd.
 */
int bd_open_trusted(const char *path, uid_t trusted_uid, int trusted_uid_set, int *fd_out);

/*
 * The state file's directory, trusted as bd_open_trusted() trusts it: an O_PATH descriptor,
 * and the file's name within it in base.  0 or -errno (-EPERM: not trusted).
 */
int bd_open_trusted_dir(const char *path, uid_t trusted_uid, int trusted_uid_set, int *dfd_out,
			const char **base);

/* Is this owner root, or the uid the open options trust? */
int bd_owner_trusted(uid_t owner, uid_t trusted_uid, int trusted_uid_set);

/* Split path into its directory (opened O_PATH, not checked: the caller checks) and base. */
int bd_open_dir(const char *path, int *dfd, const char **base);

/*
 * The file at path, opened as bd_open_trusted opens it, when this process runs in a user
 * namespace other than the initial one and the file's owner is unmapped there (the overflow
 * uid): on the host, -EPERM at once.  Trusted only once the daemon's anchor names it
 * (bd_relay_verify): docs/PROTOCOL.md §6.1.  0 and *fd, or -errno (-EPERM: another owner).
 */
int bd_open_relayed(const char *path, int *fd_out);

/*
 * The anchor's record (lib/anchor.c) from its program and .rodata map descriptors, if the
 * kernel vouches for them: 0, or -errno (-EPROTO: not an anchor).
 */
int bd_anchor_read(int prog_fd, int map_fd, struct barrierd_anchor *out);
/* Is the file open at fd the one the anchor names (its file handle)?  1, 0 or -errno. */
int bd_file_handle_is(int fd, const struct barrierd_anchor *a);

#endif
