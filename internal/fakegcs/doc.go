// Package fakegcs is a small in-memory fake of the Google Cloud Storage JSON API, for tests: an http.Handler to
// put behind httptest.NewServer and reach with the real client (google.golang.org/api/storage/v1) through
// STORAGE_EMULATOR_HOST or option.WithEndpoint(URL + "/storage/v1/").
//
// It speaks the part of the wire protocol that kubeup's state store uses: objects.insert (uploadType=media and
// multipart, on /upload/storage/v1/b/{bucket}/o), objects.get (metadata, or the content with alt=media, which
// carries the X-Goog-Generation header), objects.list (prefix, pageToken, maxResults), objects.delete, and the
// preconditions ifGenerationMatch and ifGenerationNotMatch (0 on insert: the object must not exist). Generations
// increase with every write, across the server. Errors use Google's JSON format:
// {"error":{"code":404,"message":"...","errors":[{"domain":"global","reason":"notFound","message":"..."}]}}.
//
// Buckets exist from the start (New's arguments) and cannot be created or removed. No versioning, ACLs,
// resumable uploads, or delimiter listing.
//
// It imports nothing from kubeup.
package fakegcs
