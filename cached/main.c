/*
 * tiercached: wires the modules together and nothing else.
 *
 *   tiercached -c FILE [--check-config]
 *
 * Exit status: 0 clean stop, 64 usage, 78 bad configuration, 1 failure to
 * start or run.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "daemon.h"
#include "log.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: tiercached -c FILE [--check-config]\n"
		   "  -c, --config FILE   configuration (INI; see conf/tiercache.conf)\n"
		   "      --check-config  validate FILE and exit (0 ok, 78 errors)\n"
		   "  -V, --version       print the version\n"
		   "  -h, --help          this text\n");
}

/* --check-config: a warning is printed, not an error (exit 0). */
static void print_warning(void *arg, const char *msg)
{
	fprintf(stderr, "warning: %s: %s\n", (const char *)arg, msg);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"check-config", no_argument, NULL, 'k'},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *file = NULL;
	int check = 0, o;
	while ((o = getopt_long(argc, argv, "c:Vh", opts, NULL)) != -1) {
		switch (o) {
		case 'c': file = optarg; break;
		case 'k': check = 1; break;
		case 'V': printf("tiercached %s\n", TIERCACHE_VERSION); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 64;
		}
	}
	if (!file || optind != argc) {
		usage(stderr);
		return 64;
	}
	struct config *cfg = NULL;
	char *errors = NULL;
	if (config_load(file, &cfg, &errors) < 0) {
		fputs(errors ? errors : "configuration error\n", stderr);
		free(errors);
		return CONFIG_EXIT_BAD;
	}
	free(errors);
	if (check) {
		unsigned nwarn = config_warnings(cfg, print_warning, (void *)file);
		printf("%s: ok (%u datasets%s)\n", file, cfg->ndatasets, nwarn ? ", with warnings" : "");
		config_free(cfg);
		return 0;
	}
	struct daemon d;
	char err[1024] = "";
	int rc = daemon_init(&d, cfg, err, sizeof(err));
	if (rc == 0)
		rc = daemon_run(&d);
	else
		log_err("op=start err=\"%s\"", err);
	daemon_free(&d);
	config_free(d.cfg); /* a reload may have replaced cfg */
	return rc < 0 ? 1 : 0;
}
