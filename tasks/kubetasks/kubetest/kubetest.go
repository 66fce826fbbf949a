package kubetest

import (
	"crypto/tls"
	"encoding/base64"
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

// API speaks the shapes of kube-apiserver's answers that kubetasks reads: a GET of an object (the object with the
// fields the server sets: uid, resourceVersion, creationTimestamp, managedFields; a default it fills in), a GET
// of a collection with a labelSelector (key=value: the objects directly under the path that carry the label), a
// 404 with a Status, a PATCH of server-side apply (application/apply-patch+yaml, fieldManager, force) that sets
// the manager's fields, keeps other managers' fields and drops the fields the manager applied before and no
// longer names, a DELETE, and GET /version.
//
// Its state is the exported fields, under the API's lock (Lock, Unlock) while the server runs.
type API struct {
	sync.Mutex
	// Objects are the objects by API path (/apis/apps/v1/namespaces/kube-system/deployments/coredns).
	Objects map[string]map[string]any
	// Patches is "PATH fieldManager=... force=..." per PATCH; Deletes the path of each DELETE that deleted.
	Patches []string
	Deletes []string
	// Gets counts the GETs.
	Gets int

	// URL is the server's (https://127.0.0.1:PORT); CAPEM its certificate, which a client trusts; CertPEM and
	// KeyPEM a client certificate it accepts (it accepts any).
	URL                    string
	CAPEM, CertPEM, KeyPEM []byte

	// owned is, per object, each manager's top-level fields (a simplification of managedFields).
	owned map[string]map[string][]string
	srv   *httptest.Server
}

// New starts an API, closed when the test ends, and returns it with a client of it whose field manager is
// "kubeup".
func New(t testing.TB) (*API, *kubetasks.Client) {
	t.Helper()
	f := &API{Objects: map[string]map[string]any{}, owned: map[string]map[string][]string{}}
	f.srv = httptest.NewUnstartedServer(f)
	f.srv.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	f.URL = f.srv.URL
	f.CAPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.srv.Certificate().Raw})
	f.CertPEM, f.KeyPEM = ClientCert(t)
	c, err := kubetasks.NewClient(f.URL, "kubeup", f.CAPEM, f.CertPEM, f.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

// Close stops the server: the API no longer answers (its port refuses connections).
func (f *API) Close() { f.srv.Close() }

func status(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "message": msg, "code": code})
}

func (f *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.Lock()
	defer f.Unlock()
	if len(r.TLS.PeerCertificates) == 0 {
		status(w, 401, "Unauthorized", "Unauthorized")
		return
	}
	path := r.URL.Path
	switch r.Method {
	case http.MethodDelete:
		if _, ok := f.Objects[path]; !ok {
			status(w, 404, "NotFound", "not found")
			return
		}
		delete(f.Objects, path)
		delete(f.owned, path)
		f.Deletes = append(f.Deletes, path)
		json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "status": "Success"})
	case http.MethodGet:
		f.Gets++
		if path == "/version" {
			json.NewEncoder(w).Encode(map[string]any{"major": "1", "minor": "34", "gitVersion": "v1.34.2"})
			return
		}
		if sel := r.URL.Query().Get("labelSelector"); sel != "" {
			// A list: the objects directly under path whose labels hold key=value.
			k, v, _ := strings.Cut(sel, "=")
			items := []any{}
			for p, obj := range f.Objects {
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
		obj, ok := f.Objects[path]
		if !ok {
			status(w, 404, "NotFound", fmt.Sprintf("%q not found", path[strings.LastIndex(path, "/")+1:]))
			return
		}
		json.NewEncoder(w).Encode(obj)
	case http.MethodPatch:
		f.apply(w, r, path)
	default:
		status(w, 405, "MethodNotAllowed", r.Method)
	}
}

// apply is a PATCH of server-side apply.
func (f *API) apply(w http.ResponseWriter, r *http.Request, path string) {
	if ct := r.Header.Get("Content-Type"); ct != "application/apply-patch+yaml" {
		status(w, 415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/apply-patch+yaml, ...: "+ct)
		return
	}
	manager := r.URL.Query().Get("fieldManager")
	if manager == "" {
		status(w, 422, "Invalid", "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch")
		return
	}
	f.Patches = append(f.Patches, path+" fieldManager="+manager+" force="+r.URL.Query().Get("force"))
	body, _ := io.ReadAll(r.Body)
	var applied map[string]any
	if err := yaml.Unmarshal(body, &applied); err != nil {
		status(w, 400, "BadRequest", err.Error())
		return
	}
	obj, ok := f.Objects[path]
	if !ok {
		obj = map[string]any{"metadata": map[string]any{
			"uid": "0b6f1b7a", "creationTimestamp": time.Unix(0, 0).UTC().Format(time.RFC3339),
		}}
		f.Objects[path] = obj
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
	meta["resourceVersion"] = fmt.Sprint(len(f.Patches))
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
}

// Kubeconfig is a kubeconfig whose context, cluster and user (name+"-admin") entries, named name as `kubeup
// export kubeconfig` names them, reach server ("" is the API's URL) with the API's credentials, embedded.
func (f *API) Kubeconfig(name, server string) []byte {
	if server == "" {
		server = f.URL
	}
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	user := name + "-admin"
	return []byte("apiVersion: v1\nkind: Config\ncurrent-context: " + name + "\n" +
		"clusters:\n- name: " + name + "\n  cluster:\n    server: " + server + "\n    certificate-authority-data: " + b64(f.CAPEM) + "\n" +
		"contexts:\n- name: " + name + "\n  context:\n    cluster: " + name + "\n    user: " + user + "\n" +
		"users:\n- name: " + user + "\n  user:\n    client-certificate-data: " + b64(f.CertPEM) + "\n    client-key-data: " + b64(f.KeyPEM) + "\n")
}
