/* SPDX-License-Identifier: Apache-2.0 */
#include "extract.h"

#include <archive.h>
#include <archive_entry.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "archive-dl.h"
#include "cleanup.h"

/*
 * Decompression filters, enabled only when libarchive does them in-process: for a filter
 * it was built without, archive_read_support_filter_*() returns ARCHIVE_WARN and would
 * run an external program (gzip -d, lzop, lrzip, ...) on the untrusted data, on the
 * host. Formats are always parsed in-process (format_names).
 */
static const char *const filter_names[] = {
	"archive_read_support_filter_gzip",	"archive_read_support_filter_bzip2",
	"archive_read_support_filter_compress", "archive_read_support_filter_xz",
	"archive_read_support_filter_lzma",	"archive_read_support_filter_lzip",
	"archive_read_support_filter_zstd",	"archive_read_support_filter_lz4",
};

/*
 * Archive formats, named one by one instead of archive_read_support_format_all: never
 * mtree, whose entries may name a host file to take the contents from (`contents=`,
 * read or not depending on the libarchive version and its options), nor raw, which
 * takes any input for one entry. Every format here carries its data in the archive.
 */
static const char *const format_names[] = {
	"archive_read_support_format_tar",  "archive_read_support_format_cpio",
	"archive_read_support_format_zip",  "archive_read_support_format_7zip",
	"archive_read_support_format_ar",   "archive_read_support_format_iso9660",
	"archive_read_support_format_xar",  "archive_read_support_format_cab",
	"archive_read_support_format_lha",  "archive_read_support_format_rar",
	"archive_read_support_format_rar5", "archive_read_support_format_empty",
};

static void enable_formats(const struct ts_libarchive *L, struct archive *a)
{
	for (size_t i = 0; i < ELEMENTSOF(format_names); i++) {
		__typeof__(archive_read_support_format_tar) *fn;

		*(void **)&fn = dlsym(L->dl, format_names[i]);
		if (fn)
			fn(a);
	}
}

void ts_libarchive_enable_filters(const struct ts_libarchive *L, struct archive *a)
{
	for (size_t i = 0; i < ELEMENTSOF(filter_names); i++) {
		__typeof__(archive_read_support_filter_gzip) *fn;
		struct archive *probe;

		*(void **)&fn = dlsym(L->dl, filter_names[i]);
		probe = fn ? L->read_new() : NULL;
		if (!probe)
			continue;
		if (fn(probe) == ARCHIVE_OK)
			fn(a);
		L->read_free(probe);
	}
}

int ts_libarchive_load(struct ts_libarchive *L, struct ts_error *err)
{
	const struct {
		const char *name;
		void **slot;
	} syms[] = {
		{ "archive_read_new", (void **)&L->read_new },
		{ "archive_read_open_fd", (void **)&L->open_fd },
		{ "archive_read_next_header", (void **)&L->next_header },
		{ "archive_read_data", (void **)&L->read_data },
		{ "archive_read_free", (void **)&L->read_free },
		{ "archive_error_string", (void **)&L->error_string },
		{ "archive_entry_pathname", (void **)&L->entry_pathname },
		{ "archive_entry_filetype", (void **)&L->entry_filetype },
		{ "archive_entry_perm", (void **)&L->entry_perm },
		{ "archive_entry_hardlink", (void **)&L->entry_hardlink },
		{ "archive_format", (void **)&L->format },
		{ "archive_entry_size", (void **)&L->entry_size },
		{ "archive_entry_size_is_set", (void **)&L->entry_size_is_set },
		{ "archive_entry_symlink", (void **)&L->entry_symlink },
		{ "archive_entry_mode", (void **)&L->entry_mode },
		{ "archive_read_support_format_tar", (void **)&L->support_tar },
	};

	L->dl = dlopen(LIBARCHIVE_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!L->dl)
		return ts_err(err, -ENOPKG,
			      "archives need libarchive (%s: %s); install the libarchive13 "
			      "package",
			      LIBARCHIVE_SONAME, dlerror());
	for (size_t i = 0; i < ELEMENTSOF(syms); i++) {
		*syms[i].slot = dlsym(L->dl, syms[i].name);
		if (!*syms[i].slot) {
			dlclose(L->dl);
			return ts_err(err, -ENOPKG, "%s has no `%s`", LIBARCHIVE_SONAME,
				      syms[i].name);
		}
	}
	return 0;
}

/*
 * The sandbox path of an entry: dst/NAME with `.` and empty components dropped. 1 when
 * nothing is left (the destination itself), -EXDEV for an absolute name or a `..`
 * component, -ENAMETOOLONG, else 0.
 */
static int entry_path(const char *name, const char *dst, char *out, size_t len)
{
	size_t used;
	const char *p = name;
	bool any = false;

	if (name[0] == '/')
		return -EXDEV;
	used = (size_t)snprintf(out, len, "%s", dst);
	if (used >= len)
		return -ENAMETOOLONG;
	while (*p) {
		size_t n = strcspn(p, "/");

		if (n == 2 && !strncmp(p, "..", 2))
			return -EXDEV;
		if (n > 0 && !(n == 1 && p[0] == '.')) {
			if (used + 1 + n >= len)
				return -ENAMETOOLONG;
			out[used++] = '/';
			memcpy(out + used, p, n);
			used += n;
			out[used] = '\0';
			any = true;
		}
		p += n;
		p += *p == '/';
	}
	return any ? 0 : 1;
}

struct data_reader {
	const struct ts_libarchive *L;
	struct archive *a;
	bool failed;
};

static ssize_t read_entry(void *userdata, void *buf, size_t len)
{
	struct data_reader *d = userdata;
	la_ssize_t n = d->L->read_data(d->a, buf, len);

	if (n < 0) {
		d->failed = true;
		return -EIO;
	}
	return (ssize_t)n;
}

/* A failure that leaves the connection unusable: stop. Others skip the entry. */
static bool fatal(int r)
{
	return r == -EPROTO || r == -ECONNRESET || r == -ETIMEDOUT || r == -EPIPE ||
	       r == -ENOTCONN || r == -ENOMEM;
}

static int extract_entry(struct ts_copy *c, const struct ts_libarchive *L, struct archive *a,
			 struct archive_entry *e, const char *shown, const char *dst,
			 struct ts_error *err)
{
	const char *name = L->entry_pathname(e);
	char path[PATH_MAX];
	unsigned type, perm;
	int r;

	if (!name || !name[0]) {
		ts_copy_skip(c, "`%s`: skipped an entry without a usable name", shown);
		return 0;
	}
	r = entry_path(name, dst, path, sizeof(path));
	if (r == 1)
		return 0;
	if (r == -EXDEV) {
		ts_copy_skip(c, "`%s`: skipped `%s`: an absolute name or one with `..`", shown,
			     name);
		return 0;
	}
	if (r < 0) {
		ts_copy_skip(c, "`%s`: skipped `%s`: name too long", shown, name);
		return 0;
	}
	type = (unsigned)L->entry_filetype(e);
	perm = (unsigned)L->entry_perm(e) & 0777; /* never setuid, setgid or sticky */
	if (L->entry_hardlink(e)) {
		ts_copy_skip(c, "`%s`: skipped `%s`: a hard link (not extracted)", shown, name);
		return 0;
	}
	if (type == AE_IFDIR) {
		r = c->ops->mkdir(c->ctx, path, perm | 0700, err);
	} else if (type == AE_IFREG) {
		struct data_reader d = { .L = L, .a = a };

		r = c->ops->write_from(c->ctx, path, (int)perm, read_entry, &d, err);
		if (d.failed)
			return ts_err(err, -EIO, "read `%s` in `%s`: %s", name, shown,
				      L->error_string(a) ? L->error_string(a) : "damaged");
	} else {
		ts_copy_skip(c, "`%s`: skipped `%s`: %s", shown, name,
			     type == AE_IFLNK ? "a symbolic link (not extracted)"
					      : "not a regular file or directory");
		return 0;
	}
	if (r < 0 && !fatal(r)) {
		ts_copy_skip(c, "`%s`: skipped `%s`: %s", shown, name, err->msg);
		ts_err_clear(err);
		r = 0;
	}
	return r;
}

int ts_archive_extract(struct ts_copy *c, int fd, const char *shown, const char *dst,
		       struct ts_error *err)
{
	struct ts_libarchive L = { 0 };
	struct archive *a;
	struct archive_entry *e;
	struct stat st;
	int r;

	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
		return ts_err(err, -EISDIR, "`%s` is a directory, not an archive", shown);
	r = ts_libarchive_load(&L, err);
	if (r < 0)
		return r;
	a = L.read_new();
	if (!a) {
		dlclose(L.dl);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	ts_libarchive_enable_filters(&L, a);
	enable_formats(&L, a);
	if (L.open_fd(a, fd, 64 * 1024) != ARCHIVE_OK) {
		r = ts_err(err, -EINVAL, "`%s` is not an archive: %s", shown,
			   L.error_string(a) ? L.error_string(a) : "unreadable");
		goto out;
	}
	for (bool first = true; r == 0; first = false) {
		int h = L.next_header(a, &e);

		/* No input at all is no archive; an archive without entries still makes the
		 * destination, as one with entries does. */
		if (first && h == ARCHIVE_EOF && L.format(a) == ARCHIVE_FORMAT_EMPTY) {
			r = ts_err(err, -EINVAL, "`%s` is empty: not an archive", shown);
			break;
		}
		/* the destination only once there is an archive to put into it */
		if (first && (h == ARCHIVE_OK || h == ARCHIVE_WARN || h == ARCHIVE_EOF) &&
		    (r = c->ops->mkdir(c->ctx, dst, 0755, err)) < 0)
			break;
		if (h == ARCHIVE_EOF)
			break;
		if (h == ARCHIVE_FAILED) {
			ts_copy_skip(c, "`%s`: skipped an unreadable entry: %s", shown,
				     L.error_string(a) ? L.error_string(a) : "?");
			continue;
		}
		if (h != ARCHIVE_OK && h != ARCHIVE_WARN) {
			r = ts_err(err, -EIO, "read `%s`: %s", shown,
				   L.error_string(a) ? L.error_string(a) : "damaged archive");
			break;
		}
		r = extract_entry(c, &L, a, e, shown, dst, err);
	}
out:
	L.read_free(a);
	dlclose(L.dl);
	return r;
}
