/*
 * Cold backend "rados": a dataset is the objects of one Ceph RADOS pool,
 * namespace and object-name prefix. See backend_rados.c for the threading
 * model and docs/ceph.md for configuration and behaviour.
 */
#ifndef TIERCACHE_BACKEND_RADOS_H
#define TIERCACHE_BACKEND_RADOS_H

#include "backend.h"

extern const struct cold_backend_ops cold_rados_ops;

/* Defaults when the dataset leaves a key at 0. */
#define RADOS_DEFAULT_OP_TIMEOUT_S 30u
#define RADOS_DEFAULT_MAX_INFLIGHT 16u

/* The xattr tierctl import stores on each uploaded file (on the first
 * object of a striped file): "SIZE MTIME_NS" of the local source, so a
 * re-run skips what did not change. "" while an upload is under way. */
#define RADOS_SRC_XATTR "tiercache.src"

/* libradosstriper's names: a striped file F is stored as objects
 * "F.%016x" (0, 1, ...); object 0 carries the layout and logical size. */
#define RADOS_STRIPER_SUFFIX_LEN 17u /* ".%016x" */
#define RADOS_STRIPER_XATTR_SIZE "striper.size"
#define RADOS_STRIPER_XATTR_SU "striper.layout.stripe_unit"
#define RADOS_STRIPER_XATTR_SC "striper.layout.stripe_count"
#define RADOS_STRIPER_XATTR_OS "striper.layout.object_size"

#endif
