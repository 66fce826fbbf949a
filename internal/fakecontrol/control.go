package fakecontrol

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// ThrottledKey is the key of GET /__fake/calls's answer that holds Core.Throttled, when it is not 0. No
// operation is named so: a fake's Mutating says no to every name that starts with "__".
const ThrottledKey = "__throttled"

// Endpoint is a control endpoint of one fake's own: POST /__fake/<Path>?<Param>=VALUE, answered 204 when Do(VALUE)
// succeeds and 404 with its error otherwise (the endpoints choose a thing that must exist).
type Endpoint struct {
	Path, Param string
	Do          func(value string) error
}

// DecodeFaults decodes a fake's JSON faults, refusing fields F does not have.
func DecodeFaults[F any](r io.Reader) (F, error) {
	var f F
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	err := dec.Decode(&f)
	return f, err
}

// Control is the handler of the control endpoints under /__fake/ of the fake called name: the calls core counts,
// its reset, the fault injection setFaults sets (from a JSON F), and the fake's own endpoints. Anything else under
// /__fake/ is a 404 that lists them.
func Control[C, F any](name string, core *Core[C], setFaults func(F) error, own ...Endpoint) http.Handler {
	usage := []string{"GET /__fake/calls", "POST /__fake/reset-calls", "POST /__fake/faults"}
	for _, e := range own {
		usage = append(usage, "POST /__fake/"+e.Path+"?"+e.Param+"=")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/__fake/calls" && r.Method == http.MethodGet:
			calls := core.Calls()
			if n := core.Throttled(); n > 0 {
				calls[ThrottledKey] = n
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(calls)
			return
		case r.URL.Path == "/__fake/reset-calls" && r.Method == http.MethodPost:
			core.ResetCalls()
			w.WriteHeader(http.StatusNoContent)
			return
		case r.URL.Path == "/__fake/faults" && r.Method == http.MethodPost:
			f, err := DecodeFaults[F](r.Body)
			if err != nil {
				http.Error(w, "faults: "+err.Error(), http.StatusBadRequest)
				return
			}
			if err := setFaults(f); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		for _, e := range own {
			if r.URL.Path == "/__fake/"+e.Path && r.Method == http.MethodPost {
				if err := e.Do(r.URL.Query().Get(e.Param)); err != nil {
					http.Error(w, err.Error(), http.StatusNotFound)
					return
				}
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		http.Error(w, name+": no control endpoint "+r.Method+" "+r.URL.Path+": "+strings.Join(usage, ", "), http.StatusNotFound)
	})
}
