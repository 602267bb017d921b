/*
 * Spare fill buffers: see fill_buf.h.
 */
#include "fill_buf.h"

#include <stdlib.h>

#include "loop.h"

#define FILL_BUF_MIN 4096u

static size_t size_class(size_t len)
{
	size_t cap = FILL_BUF_MIN;
	while (cap < len && cap <= ((size_t)-1) / 2)
		cap <<= 1;
	return cap < len ? len : cap;
}

void *fill_buf_get(struct fill_table *t, size_t len, size_t *cap)
{
	loop_assert();
	size_t want = size_class(len);
	for (unsigned i = t->nspare; i-- > 0;) { /* the latest first: its pages are warm */
		if (t->spare_cap[i] != want)
			continue;
		void *buf = t->spare[i];
		t->spare_bytes -= want;
		t->nspare--;
		t->spare[i] = t->spare[t->nspare];
		t->spare_cap[i] = t->spare_cap[t->nspare];
		*cap = want;
		return buf;
	}
	*cap = want;
	return malloc(want);
}

void fill_buf_put(struct fill_table *t, void *buf, size_t cap)
{
	loop_assert();
	if (!buf)
		return;
	if (t->nspare == FILL_SPARE_MAX || t->spare_bytes + cap > FILL_SPARE_BYTES) {
		/* full: drop the oldest spare if this one fits in its place
		 * (the sizes in use now are what the next fills need) */
		if (t->nspare == 0 || t->spare_bytes - t->spare_cap[0] + cap > FILL_SPARE_BYTES) {
			free(buf);
			return;
		}
		free(t->spare[0]);
		t->spare_bytes -= t->spare_cap[0];
		t->nspare--;
		for (unsigned i = 0; i < t->nspare; i++) {
			t->spare[i] = t->spare[i + 1];
			t->spare_cap[i] = t->spare_cap[i + 1];
		}
	}
	t->spare[t->nspare] = buf;
	t->spare_cap[t->nspare] = cap;
	t->nspare++;
	t->spare_bytes += cap;
}

void fill_buf_free_all(struct fill_table *t)
{
	while (t->nspare)
		free(t->spare[--t->nspare]);
	t->spare_bytes = 0;
}
