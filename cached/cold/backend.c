/*
 * The registry of cold backends, by name. Adding one: a file
 * backend_NAME.c with its ops, listed here.
 */
#include "backend.h"

#include <string.h>

#include "backend_rados.h"

extern const struct cold_backend_ops cold_posix_ops;

static const struct cold_backend_ops *const backends[] = {
	&cold_posix_ops,
	&cold_rados_ops,
	NULL,
};

const struct cold_backend_ops *cold_backend_find(const char *name)
{
	for (size_t i = 0; backends[i]; i++)
		if (strcmp(backends[i]->name, name) == 0)
			return backends[i];
	return NULL;
}
