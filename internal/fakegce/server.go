package fakegce

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"kubeup.dev/kubeup/internal/fakecontrol"
)

// Server is the fake GCE. Make one with New. It is an http.Handler.
type Server struct {
	// ctl counts the API calls by operation name ("compute.disks.insert", "dns.changes.create") and decides their
	// fate under the fault injection; it has a lock of its own.
	ctl *fakecontrol.Core[Call]
	// control serves /__fake/.
	control http.Handler
	mu      sync.Mutex // guards everything below
	// faults are the fault injection as last set: ctl has its rates, the API reads the rest.
	faults Faults
	// names draws the suffixes of managed instances' names (apart from rng, so that faults do not move them).
	names  *rand.Rand
	nextID uint64
	// metadataInstance is the instance the main address's metadata server answers for ("": the newest one).
	metadataInstance string
	projects         map[string]*project
	// ops are every operation by name (names are unique in the server).
	ops map[string]*operation
	// instanceOrder is the order instances were made in, as selfLinks (the newest last).
	instanceOrder []string
	// serviceAccounts are the service accounts AddServiceAccount made: their project by email (iam.go).
	serviceAccounts map[string]string
}

// New returns an empty fake GCE: every project exists and is empty.
func New() *Server {
	s := &Server{ctl: fakecontrol.New[Call](), names: rand.New(rand.NewPCG(3, 4)),
		projects: map[string]*project{}, ops: map[string]*operation{}}
	s.control = fakecontrol.Control("fakegce", s.ctl, s.SetFaults,
		fakecontrol.Endpoint{Path: "metadata-instance", Param: "name", Do: s.ChooseMetadataInstance})
	return s
}

// Error is a Google API error answer: {"error": {"code", "message", "errors": [{"reason", "message", "domain"}]}}.
type Error struct {
	Code    int
	Reason  string
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Code, e.Reason, e.Message) }

func errorf(code int, reason, format string, args ...any) *Error {
	return &Error{Code: code, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

func notFound(resource string) *Error {
	return errorf(http.StatusNotFound, "notFound", "The resource '%s' was not found", resource)
}

func alreadyExists(resource string) *Error {
	return errorf(http.StatusConflict, "alreadyExists", "The resource '%s' already exists", resource)
}

func invalid(format string, args ...any) *Error {
	return errorf(http.StatusBadRequest, "invalid", format, args...)
}

// newID returns a new resource id, unique in this server. Call it with s.mu held.
func (s *Server) newID() uint64 {
	s.nextID++
	return 4_000_000_000_000_000_000 + s.nextID*7919
}

// Calls returns the per-operation call counts. Every attempt is a call, rate limited or not.
func (s *Server) Calls() map[string]int { return s.ctl.Calls() }

// Throttled returns how many calls were answered 429 rateLimitExceeded (Faults.RateLimitRate) since New or
// ResetCalls. They are counted in Calls too.
func (s *Server) Throttled() int { return s.ctl.Throttled() }

// Call is one API call as the fake received it, for an observer (Observe).
type Call struct {
	// Op is the operation, as Calls counts it ("compute.disks.list").
	Op string
	// Scope is the first element of a Compute Engine path after the project: "zones", "regions", "global" or
	// "aggregated"; "" for Cloud DNS, IAM and the project itself. Where is the zone or region it names.
	Scope, Where string
	// RateLimited says it was answered 429 rateLimitExceeded (Faults).
	RateLimited bool
}

// Observe makes fn see every API call the fake receives (nil: none), as it arrives, from the goroutine that
// answers it and without the fake's lock held: fn must be safe for concurrent use and may call the fake.
func (s *Server) Observe(fn func(Call)) { s.ctl.Observe(fn) }

// ResetCalls zeroes the call counts and the count of rate limited calls.
func (s *Server) ResetCalls() { s.ctl.ResetCalls() }

// Mutating reports whether an operation changes something: every one but *.get, *.list, *.aggregatedList,
// *.wait, *.listManagedInstances and *.getFromFamily (nor a count of /__fake/calls that is not an operation's, such
// as fakecontrol.ThrottledKey).
func Mutating(op string) bool {
	if strings.HasPrefix(op, "__") {
		return false
	}
	for _, suffix := range []string{".get", ".list", ".aggregatedList", ".wait", ".listManagedInstances", ".getFromFamily"} {
		if strings.HasSuffix(op, suffix) {
			return false
		}
	}
	return true
}

// ServeHTTP dispatches a request by its path: the control endpoints, the metadata server, Compute Engine, Cloud
// DNS and IAM.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch p := r.URL.Path; {
	case strings.HasPrefix(p, "/__fake/"):
		s.control.ServeHTTP(w, r)
	case strings.HasPrefix(p, "/computeMetadata/"):
		s.serveMetadata(w, r, "")
	case strings.HasPrefix(p, "/compute/v1/projects/"):
		s.serveAPI(w, r, strings.TrimPrefix(p, "/compute/v1/projects/"), computeRoutes)
	case strings.HasPrefix(p, "/dns/v1/projects/"):
		s.serveAPI(w, r, strings.TrimPrefix(p, "/dns/v1/projects/"), dnsRoutes)
	case strings.HasPrefix(p, "/dns/v1/dns/v1/projects/"):
		// dns/v1's basePath is the host's root ("https://dns.googleapis.com/") and its paths start with
		// "dns/v1/": a client given option.WithEndpoint(ADDRESS+"dns/v1/") asks for /dns/v1/dns/v1/...; both work.
		s.serveAPI(w, r, strings.TrimPrefix(p, "/dns/v1/dns/v1/projects/"), dnsRoutes)
	case strings.HasPrefix(p, "/v1/projects/"):
		s.serveAPI(w, r, strings.TrimPrefix(p, "/v1/projects/"), iamRoutes)
	default:
		writeError(w, errorf(http.StatusNotFound, "notFound", "fakegce: no API at %s %s", r.Method, p))
	}
}

// call is one API call being answered.
type call struct {
	s       *Server
	p       *project
	method  string
	scope   string // "zones", "regions", "global", "aggregated" or "" (dns, the project itself)
	where   string // the zone or region
	names   []string
	query   url.Values
	body    []byte
	op      string
	request string // the requestId
}

// route is one method of the API: its HTTP method and path shape after the project. Path elements are literal,
// or "*" for a name; scope is the first element of compute paths.
type route struct {
	method string
	path   []string
	op     string
	handle func(c *call) (any, error)
}

// match matches elems against r's path, returning the names the "*"s stand for.
func (r *route) match(method string, elems []string) ([]string, bool) {
	if method != r.method || len(elems) != len(r.path) {
		return nil, false
	}
	var names []string
	for i, e := range r.path {
		switch {
		case e == "*":
			if elems[i] == "" {
				return nil, false
			}
			names = append(names, elems[i])
		case e != elems[i]:
			return nil, false
		}
	}
	return names, true
}

// serveAPI finds the route of the request, counts the call, applies the fault injection, and runs the route's
// handler with s.mu held. rest is the path after "projects/".
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request, rest string, routes []route) {
	elems := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	for i, e := range elems {
		if u, err := url.PathUnescape(e); err == nil {
			elems[i] = u
		}
	}
	project, elems := elems[0], elems[1:]
	var rt *route
	var names []string
	for i := range routes {
		if n, ok := routes[i].match(r.Method, elems); ok {
			rt, names = &routes[i], n
			break
		}
	}
	if rt == nil {
		writeError(w, errorf(http.StatusNotFound, "notFound", "fakegce: no method %s %s", r.Method, r.URL.Path))
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, invalid("reading the request: %v", err))
		return
	}
	c := &call{s: s, method: r.Method, query: r.URL.Query(), body: body, op: rt.op, request: r.URL.Query().Get("requestId")}
	if len(rt.path) > 0 && rt.path[0] != "managedZones" {
		c.scope = rt.path[0]
		if (c.scope == "zones" || c.scope == "regions") && len(names) > 0 {
			c.where, names = names[0], names[1:]
		}
	}
	c.names = names
	a := s.ctl.Begin(rt.op, "")
	defer a.End()
	a.Observed(Call{Op: rt.op, Scope: c.scope, Where: c.where, RateLimited: a.Fate == fakecontrol.Throttle})
	a.Wait()
	if a.Fate != fakecontrol.Pass {
		writeError(w, faultError(a.Fate))
		return
	}
	s.mu.Lock()
	denied := slices.Contains(s.faults.Denied, rt.op)
	s.mu.Unlock()
	if denied {
		writeError(w, &Error{Code: http.StatusForbidden, Reason: "forbidden",
			Message: "Permission denied for " + rt.op + " (or the resource may not exist) (fakegce: denied)"})
		return
	}
	s.mu.Lock()
	c.p = s.project(project)
	var result any
	if op, ok := c.p.requests[c.request]; ok && c.request != "" && Mutating(rt.op) {
		result = op.answer()
	} else {
		result, err = c.checkScope()
		if err == nil {
			result, err = rt.handle(c)
		}
	}
	var answer []byte
	if err == nil {
		// Encoded under the lock: the result may be the fake's live objects, which a concurrent call may change.
		answer, err = json.Marshal(result)
	}
	s.mu.Unlock()
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(http.StatusOK)
	w.Write(answer)
}

// checkScope refuses a zone or region that is not named like one. The lists of zones and regions themselves
// (zones.list, regions.list) name none.
func (c *call) checkScope() (any, error) {
	if c.where == "" {
		return nil, nil
	}
	switch c.scope {
	case "zones":
		if !validZone(c.where) {
			return nil, errorf(http.StatusBadRequest, "invalid", "Invalid value for field 'zone': '%s'. Unknown zone.", c.where)
		}
	case "regions":
		if !validRegion(c.where) {
			return nil, errorf(http.StatusBadRequest, "invalid", "Invalid value for field 'region': '%s'. Unknown region.", c.where)
		}
	}
	return nil, nil
}

// decode decodes the request's body into v (a google.golang.org/api type), accepting int64s written as JSON
// numbers where the API writes strings.
func (c *call) decode(v any) error {
	if len(c.body) == 0 {
		return invalid("Required field 'resource' not specified")
	}
	if err := decodeLenient(c.body, v); err != nil {
		return errorf(http.StatusBadRequest, "parseError", "Invalid JSON payload received. %v", err)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "fakegce: encoding the answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	w.Write(b)
}

// writeError writes err in Google's JSON error format; an error that is not an *Error is a 500 backendError.
func writeError(w http.ResponseWriter, err error) {
	e, ok := err.(*Error)
	if !ok {
		e = &Error{Code: http.StatusInternalServerError, Reason: "backendError", Message: err.Error()}
	}
	type item struct {
		Message string `json:"message"`
		Domain  string `json:"domain"`
		Reason  string `json:"reason"`
	}
	var body struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Errors  []item `json:"errors"`
		} `json:"error"`
	}
	body.Error.Code, body.Error.Message = e.Code, e.Message
	body.Error.Errors = []item{{Message: e.Message, Domain: "global", Reason: e.Reason}}
	writeJSON(w, e.Code, body)
}
