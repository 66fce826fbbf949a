package kubetasks_test

import (
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"kubeup.dev/kubeup/tasks/kubetasks"
)

// fakeAPI speaks the shapes of kube-apiserver's answers that kubetasks reads: a GET of an object (the object with
// the fields the server sets: uid, resourceVersion, creationTimestamp, managedFields; a default it fills in), a
// 404 with a Status, and a PATCH of server-side apply (application/apply-patch+yaml, fieldManager, force) that
// sets the manager's fields, keeps other managers' fields and drops the fields the manager applied before and no
// longer names.
type fakeAPI struct {
	mu      sync.Mutex
	objects map[string]map[string]any
	// owned is, per object, each manager's top-level fields (a simplification of managedFields).
	owned   map[string]map[string][]string
	patches []string // "PATH fieldManager=... force=..." per PATCH
	deletes []string
	gets    int
}

func newFakeAPI(t *testing.T) (*fakeAPI, *kubetasks.Client) {
	f := &fakeAPI{objects: map[string]map[string]any{}, owned: map[string]map[string][]string{}}
	srv := httptest.NewUnstartedServer(f)
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	certPEM, keyPEM := clientCert(t)
	c, err := kubetasks.NewClient(srv.URL, "kubeup", caPEM, certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

func status(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "message": msg, "code": code})
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(r.TLS.PeerCertificates) == 0 {
		status(w, 401, "Unauthorized", "Unauthorized")
		return
	}
	path := r.URL.Path
	switch r.Method {
	case http.MethodDelete:
		if _, ok := f.objects[path]; !ok {
			status(w, 404, "NotFound", "not found")
			return
		}
		delete(f.objects, path)
		f.deletes = append(f.deletes, path)
		json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "status": "Success"})
	case http.MethodGet:
		f.gets++
		if sel := r.URL.Query().Get("labelSelector"); sel != "" {
			// A list: the objects directly under path whose labels hold key=value.
			k, v, _ := strings.Cut(sel, "=")
			var items []any
			for p, obj := range f.objects {
				rest, ok := strings.CutPrefix(p, path+"/")
				if !ok || strings.Contains(rest, "/") {
					continue
				}
				labels, _ := obj["metadata"].(map[string]any)["labels"].(map[string]any)
				if labels[k] == v {
					items = append(items, obj)
				}
			}
			json.NewEncoder(w).Encode(map[string]any{"kind": "List", "items": items})
			return
		}
		obj, ok := f.objects[path]
		if !ok {
			status(w, 404, "NotFound", fmt.Sprintf("%q not found", path[strings.LastIndex(path, "/")+1:]))
			return
		}
		json.NewEncoder(w).Encode(obj)
	case http.MethodPatch:
		if ct := r.Header.Get("Content-Type"); ct != "application/apply-patch+yaml" {
			status(w, 415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/apply-patch+yaml, ...: "+ct)
			return
		}
		manager := r.URL.Query().Get("fieldManager")
		if manager == "" {
			status(w, 422, "Invalid", "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch")
			return
		}
		f.patches = append(f.patches, path+" fieldManager="+manager+" force="+r.URL.Query().Get("force"))
		body, _ := io.ReadAll(r.Body)
		var applied map[string]any
		if err := yaml.Unmarshal(body, &applied); err != nil {
			status(w, 400, "BadRequest", err.Error())
			return
		}
		obj, ok := f.objects[path]
		if !ok {
			obj = map[string]any{"metadata": map[string]any{
				"uid": "0b6f1b7a", "creationTimestamp": time.Unix(0, 0).UTC().Format(time.RFC3339),
			}}
			f.objects[path] = obj
			f.owned[path] = map[string][]string{}
		}
		if f.owned[path] == nil {
			f.owned[path] = map[string][]string{}
		}
		// Fields this manager applied before and does not name now go.
		for _, k := range f.owned[path][manager] {
			if _, still := applied[k]; !still && k != "metadata" {
				delete(obj, k)
			}
		}
		var keys []string
		for k, v := range applied {
			keys = append(keys, k)
			if k == "metadata" {
				meta := obj["metadata"].(map[string]any)
				for mk, mv := range v.(map[string]any) {
					meta[mk] = mv
				}
				continue
			}
			obj[k] = v
		}
		f.owned[path][manager] = keys
		meta := obj["metadata"].(map[string]any)
		meta["resourceVersion"] = fmt.Sprint(len(f.patches))
		fields := map[string]any{}
		for _, k := range keys {
			if k != "apiVersion" && k != "kind" {
				fields["f:"+k] = map[string]any{}
			}
		}
		meta["managedFields"] = []any{map[string]any{"manager": manager, "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": fields}}
		// A default the server fills in: a subject's apiGroup.
		if subjects, ok := obj["subjects"].([]any); ok {
			for _, s := range subjects {
				if m, ok := s.(map[string]any); ok && m["apiGroup"] == nil && m["kind"] != "ServiceAccount" {
					m["apiGroup"] = "rbac.authorization.k8s.io"
				}
			}
		}
		json.NewEncoder(w).Encode(obj)
	default:
		status(w, 405, "MethodNotAllowed", r.Method)
	}
}
