// Package statestore is kubeup's state store: the directory or bucket where the operator's side keeps each
// cluster (its spec, instance groups, complete spec) and the configuration nodes read at boot. It is a generic
// object store, read and written whole; the layout (<cluster>/config, <cluster>/nodeup/<group>, ...) is the
// caller's business. A Store satisfies storetasks.Store.
//
// # URLs
//
// Open takes one of:
//
//	file:///abs/dir       a local directory (a bare absolute path /abs/dir means the same)
//	s3://bucket/prefix    an S3 bucket, or any S3-compatible server (package statestore/s3store)
//	gs://bucket/prefix    a Google Cloud Storage bucket (package statestore/gsstore)
//
// The prefix is optional. A file URL's path is taken literally, without percent-decoding. URL returns the
// canonical form: cleaned, no trailing slash. DefaultURL is the store to
// use when the operator names none.
//
// Object paths are relative to the store's root and use forward slashes. Paths that are empty, absolute, hold an
// empty, "." or ".." segment, a segment starting with a dot, a backslash or a NUL byte are refused on every
// backend with an error that says why. List takes a directory prefix: List("demo") never returns "demo2/config".
//
// # Schemes
//
// file:// is built in. A bucket scheme is a package of its own that calls RegisterScheme from its init, and a
// binary opens the URLs of the schemes whose packages its main imports (import _
// "kubeup.dev/kubeup/statestore/s3store"), so that a binary links the SDKs of its stores only. Open checks the
// URL (a bucket, a prefix that is a valid object path, no user, query or fragment) and hands the scheme's open
// function a Bucket, which the store embeds for its URL, its keys (Key, KeyPrefix, Path) and its messages
// (Object, NoBucket, Conflict, ErrNoSuchObject); it checks object paths with CheckPath. A URL of a scheme kubeup
// has but this binary did not link is an error that says so and names the schemes the binary has ("this binary
// has no gs store (it has file, s3)"), told apart from a scheme kubeup does not know ("unsupported scheme").
// Package storetest holds the contract every store must pass.
//
// # Environment
//
//	KUBEUP_STATE_STORE     the default store (DefaultURL); otherwise file://$HOME/.kubeup/state
//	AWS_*                  s3://: the AWS SDK's default chain (credentials, profile, AWS_REGION; when no region
//	                       is configured, the bucket's region as S3 names it: a machine at boot needs none);
//	                       AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL point it at another server, and then address
//	                       buckets by path
//	KUBEUP_S3_PATH_STYLE   s3://: 1 addresses buckets by path even without an endpoint override
//	STORAGE_EMULATOR_HOST  gs://: host:port (or http://host:port) of an emulator, used without authentication;
//	                       otherwise the application default credentials
//
// # Conflicts
//
// Read returns an object with its Generation: the hex sha256 of the content (file://), the ETag (s3://), the
// generation number (gs://). WriteIf writes only if the object is still at that generation, or with Absent only
// if it does not exist, and otherwise fails with an error that matches ErrConflict and names the object. Two
// operators who read the same generation and both write: the first wins, the second gets ErrConflict and must
// read again. How each backend makes this atomic:
//
//   - file:// holds an exclusive flock on the root directory while it compares the current content's hash and writes,
//     so WriteIf is race-free between goroutines and processes on one machine (not across machines sharing a
//     network file system whose flock is not coherent). WriteFile and Delete hold the same lock.
//   - s3:// sends PutObject with If-Match: <etag> or If-None-Match: *, which S3 evaluates atomically. Because
//     some S3-compatible servers ignore those headers, it first compares the ETag from HeadObject; against such a
//     server two writers racing within that window can both win.
//   - gs:// sends objects.insert with ifGenerationMatch (0: must not exist), which GCS evaluates atomically.
//
// On file:// and s3:// the generation follows the content: a write of the same bytes leaves it as it was, so a
// WriteIf based on it still succeeds. That is safe (what the writer read is still what is there) but means
// "exactly one writer wins" holds only among writers that change the content. On gs:// every write is a new
// generation.
//
// WriteFile is unconditional; every write replaces the object whole and atomically.
//
// # Files
//
// The file:// store writes a temporary file in the object's directory, syncs it, renames it over the object and
// syncs the directory. Objects are created 0600, because the state will hold secrets; directories 0755 (the
// umask applies), so cluster names are visible to other users, their content is not. Delete removes the
// directories it leaves empty, up to but never including the root. Hidden files are never listed. The root is
// created on the first write.
//
// A temporary file is named .<object>.tmp-<digits>, and its writer holds an exclusive flock on it until it is
// renamed. A writer that was killed leaves it behind; a temporary file that can be flocked without waiting is
// such a leftover, and the next write in its directory removes it, as does a Delete in the directories it walks
// up (so that leftovers do not keep a deleted cluster's directories alive). A live writer's temporary file, or a
// hidden file of another name, is never touched.
//
// # Existence
//
// Check says whether the store itself is there: the directory (file://) or the bucket (s3://, gs://). A missing
// one is an error that names it and matches ErrNoStore, so that a typo in a URL is not taken for an empty store.
// The file:// store makes its directory on its first write (CreatesRoot); no store makes a bucket.
//
// # Errors
//
// Errors are wrapped with the operation and the object's URL ("reading s3://bucket/prefix/demo/config: ..."). An
// absent object matches fs.ErrNotExist (on s3://, a missing bucket does not: NoSuchBucket is a configuration
// error; GCS answers both with the same 404); permission errors wrap errclass.ErrAccessDenied (engine.ErrAccessDenied);
// throttling and server errors are errclass.Retryable (engine.Retryable): the engine's classes, from the leaf
// internal/errclass.
//
// # Imports
//
// statestore imports no cloud SDK (its bucket schemes, in their own packages, do) and nothing from kubeup but
// internal/atomicfile (the file store's writes): not the engine, not model/, not cloudup or its other packages,
// so that anything may use it (test/imports holds it to that). Its s3store and gsstore import it, their SDK and internal/errclass (the engine's error classes).
package statestore
