package fakegcs

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Server is the fake. Its zero value is not usable: build one with New.
type Server struct {
	// MaxPageSize caps the items per objects.list page (default 1000), so that tests can exercise paging.
	MaxPageSize int

	mux     *http.ServeMux
	mu      sync.Mutex
	buckets map[string]map[string]*object
	lastGen int64
}

type object struct {
	name, contentType string
	data              []byte
	gen               int64
	updated           time.Time
}

// New returns a fake with the named, empty buckets.
func New(buckets ...string) *Server {
	s := &Server{MaxPageSize: 1000, buckets: map[string]map[string]*object{}, mux: http.NewServeMux()}
	for _, b := range buckets {
		s.buckets[b] = map[string]*object{}
	}
	s.mux.HandleFunc("POST /upload/storage/v1/b/{bucket}/o", s.insert)
	s.mux.HandleFunc("GET /storage/v1/b/{bucket}/o", s.list)
	s.mux.HandleFunc("GET /storage/v1/b/{bucket}/o/{object...}", s.get)
	s.mux.HandleFunc("GET /download/storage/v1/b/{bucket}/o/{object...}", s.get)
	s.mux.HandleFunc("DELETE /storage/v1/b/{bucket}/o/{object...}", s.delete)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "notFound", fmt.Sprintf("fakegcs: no route for %s %s", r.Method, r.URL.Path))
	})
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Object returns the content and generation of an object, for tests that check what was stored.
func (s *Server) Object(bucket, name string) (data []byte, gen int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.buckets[bucket][name]
	if o == nil {
		return nil, 0, false
	}
	return append([]byte(nil), o.data...), o.gen, true
}

func (s *Server) insert(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	name, ctype := q.Get("name"), r.Header.Get("Content-Type")
	var data []byte
	var err error
	switch q.Get("uploadType") {
	case "media":
		data, err = io.ReadAll(r.Body)
	case "multipart":
		var meta struct{ Name, ContentType string }
		meta, data, ctype, err = readMultipart(r)
		if meta.Name != "" {
			name = meta.Name
		}
		if meta.ContentType != "" {
			ctype = meta.ContentType
		}
	default:
		writeError(w, http.StatusBadRequest, "invalid", fmt.Sprintf("fakegcs: unsupported uploadType %q", q.Get("uploadType")))
		return
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid", "reading the upload: "+err.Error())
		return
	}
	if name == "" {
		writeError(w, http.StatusBadRequest, "required", "Required parameter: name")
		return
	}
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	objs, ok := s.bucket(w, r)
	if !ok || !checkPreconditions(w, r, objs[name]) {
		return
	}
	s.lastGen++
	o := &object{name: name, contentType: ctype, data: data, gen: s.lastGen, updated: time.Now().UTC()}
	objs[name] = o
	writeJSON(w, metadata(r.PathValue("bucket"), o))
}

// readMultipart reads a multipart/related upload: the object's JSON metadata, then its content.
func readMultipart(r *http.Request) (meta struct{ Name, ContentType string }, data []byte, ctype string, err error) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mt, "multipart/") {
		return meta, nil, "", fmt.Errorf("content type %q is not multipart", r.Header.Get("Content-Type"))
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	part, err := mr.NextPart()
	if err != nil {
		return meta, nil, "", fmt.Errorf("metadata part: %w", err)
	}
	if err := json.NewDecoder(part).Decode(&meta); err != nil {
		return meta, nil, "", fmt.Errorf("metadata part: %w", err)
	}
	part, err = mr.NextPart()
	if err != nil {
		return meta, nil, "", fmt.Errorf("media part: %w", err)
	}
	data, err = io.ReadAll(part)
	return meta, data, part.Header.Get("Content-Type"), err
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	objs, ok := s.bucket(w, r)
	if !ok {
		return
	}
	o := objs[r.PathValue("object")]
	if g := r.URL.Query().Get("generation"); o != nil && g != "" && g != strconv.FormatInt(o.gen, 10) {
		o = nil // only the live generation is kept
	}
	if o == nil {
		writeError(w, http.StatusNotFound, "notFound", "No such object: "+r.PathValue("bucket")+"/"+r.PathValue("object"))
		return
	}
	if !checkPreconditions(w, r, o) {
		return
	}
	if r.URL.Query().Get("alt") != "media" {
		writeJSON(w, metadata(r.PathValue("bucket"), o))
		return
	}
	w.Header().Set("Content-Type", o.contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(o.data)))
	w.Header().Set("X-Goog-Generation", strconv.FormatInt(o.gen, 10))
	w.Header().Set("X-Goog-Metageneration", "1")
	w.Header().Set("X-Goog-Stored-Content-Length", strconv.Itoa(len(o.data)))
	w.Write(o.data)
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	objs, ok := s.bucket(w, r)
	if !ok {
		return
	}
	name := r.PathValue("object")
	if objs[name] == nil {
		writeError(w, http.StatusNotFound, "notFound", "No such object: "+r.PathValue("bucket")+"/"+name)
		return
	}
	if !checkPreconditions(w, r, objs[name]) {
		return
	}
	delete(objs, name)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	size := s.MaxPageSize
	if n, err := strconv.Atoi(q.Get("maxResults")); err == nil && n > 0 && n < size {
		size = n
	}
	after := ""
	if tok := q.Get("pageToken"); tok != "" {
		b, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid", "Invalid pageToken")
			return
		}
		after = string(b)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	objs, ok := s.bucket(w, r)
	if !ok {
		return
	}
	var names []string
	for name := range objs {
		if strings.HasPrefix(name, q.Get("prefix")) && name > after {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	resp := map[string]any{"kind": "storage#objects"}
	if len(names) > size {
		names = names[:size]
		resp["nextPageToken"] = base64.RawURLEncoding.EncodeToString([]byte(names[size-1]))
	}
	items := []map[string]any{}
	for _, name := range names {
		items = append(items, metadata(r.PathValue("bucket"), objs[name]))
	}
	resp["items"] = items
	writeJSON(w, resp)
}

// bucket returns the request's bucket, or writes a 404 and returns false. The caller holds s.mu.
func (s *Server) bucket(w http.ResponseWriter, r *http.Request) (map[string]*object, bool) {
	objs, ok := s.buckets[r.PathValue("bucket")]
	if !ok {
		writeError(w, http.StatusNotFound, "notFound", "The specified bucket does not exist.")
	}
	return objs, ok
}

// checkPreconditions evaluates ifGenerationMatch and ifGenerationNotMatch against o (nil: absent, generation 0),
// or writes a 412 and returns false.
func checkPreconditions(w http.ResponseWriter, r *http.Request, o *object) bool {
	var gen int64
	if o != nil {
		gen = o.gen
	}
	for param, wantEqual := range map[string]bool{"ifGenerationMatch": true, "ifGenerationNotMatch": false} {
		v := r.URL.Query().Get(param)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid", fmt.Sprintf("Invalid value for %s: %q", param, v))
			return false
		}
		if (n == gen) != wantEqual {
			writeError(w, http.StatusPreconditionFailed, "conditionNotMet", "At least one of the pre-conditions you specified did not hold.")
			return false
		}
	}
	return true
}

func metadata(bucket string, o *object) map[string]any {
	sum := md5.Sum(o.data)
	gen := strconv.FormatInt(o.gen, 10)
	return map[string]any{
		"kind":           "storage#object",
		"id":             bucket + "/" + o.name + "/" + gen,
		"name":           o.name,
		"bucket":         bucket,
		"generation":     gen,
		"metageneration": "1",
		"contentType":    o.contentType,
		"size":           strconv.Itoa(len(o.data)),
		"md5Hash":        base64.StdEncoding.EncodeToString(sum[:]),
		"timeCreated":    o.updated.Format(time.RFC3339Nano),
		"updated":        o.updated.Format(time.RFC3339Nano),
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"code":    code,
		"message": msg,
		"errors":  []map[string]string{{"domain": "global", "reason": reason, "message": msg}},
	}})
}
