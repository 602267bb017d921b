/*
 * `tierctl import SRC_DIR DATASET`: upload a local directory tree into a
 * rados dataset's pool, then ask the daemon to refresh the manifest.
 * See import.c and docs/ceph.md.
 */
#ifndef TIERCACHE_TIERCTL_IMPORT_H
#define TIERCACHE_TIERCTL_IMPORT_H

struct tiercache;

#define TIERCTL_IMPORT_USAGE "[-j N] [--striper-above SIZE] SRC_DIR DATASET"
#define TIERCTL_IMPORT_SUMMARY "upload a directory into a rados dataset, then refresh it"

/* argv[0] = "import". Returns a tierctl exit status (0 ok, 1 failed, 2
 * usage). Uses getopt (the caller resets optind). */
int tierctl_import(struct tiercache *tc, int argc, char **argv);

#endif
