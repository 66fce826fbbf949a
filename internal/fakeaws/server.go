package fakeaws

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"kubeup.dev/kubeup/internal/fakecontrol"
)

// Server is the fake AWS. Its zero value is not usable: make one with New. It is an http.Handler.
type Server struct {
	// ctl counts the API calls by operation name ("DescribeVolumes", "ChangeResourceRecordSets", "PutObject") and
	// decides their fate under the fault injection; it has a lock of its own.
	ctl *fakecontrol.Core[Call]
	// control serves /__fake/.
	control http.Handler
	mu      sync.Mutex // guards everything below, and every service's state
	// faults are the fault injection as last set: ctl has its rates, the services read the rest.
	faults Faults
	nextID uint64
	// imdsInstance is the instance IMDS answers for on the main address ("" until chosen: the newest instance).
	imdsInstance string

	ec2   ec2State
	asg   asgState
	iam   iamState
	r53   route53State
	s3    http.Handler
	start time.Time
}

// New returns an empty fake AWS: no VPC, no volume, no hosted zone, no bucket; the regions' zones and a few
// public images exist, as in a new account.
func New() *Server {
	s := &Server{ctl: fakecontrol.New[Call](), start: time.Now()}
	s.control = fakecontrol.Control("fakeaws", s.ctl, s.SetFaults,
		fakecontrol.Endpoint{Path: "imds-instance", Param: "id", Do: s.ChooseIMDSInstance})
	s.SetFaults(Faults{})
	s.initEC2()
	s.initASG()
	s.initIAM()
	s.initRoute53()
	s.s3 = newS3()
	return s
}

// Error is an AWS error answer: its HTTP status, code and message, written in the protocol of the service that
// answers (EC2's <Response><Errors>, Query's and Route53's <ErrorResponse>, S3's <Error>).
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// errorf makes a client error (400) with code.
func errorf(code, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: code, Message: fmt.Sprintf(format, args...)}
}

// newID returns a new resource id: prefix-<17 hex digits>, unique in this server. Call it with s.mu held.
func (s *Server) newID(prefix string) string {
	s.nextID++
	return fmt.Sprintf("%s-%017x", prefix, s.nextID)
}

// Calls returns the per-operation call counts. Every attempt is a call, throttled or not.
func (s *Server) Calls() map[string]int { return s.ctl.Calls() }

// Throttled returns how many calls were answered with a throttling error (Faults.ThrottleRate and
// Faults.MaxConcurrent) since New or ResetCalls. They are counted in Calls too: every attempt is a call.
func (s *Server) Throttled() int { return s.ctl.Throttled() }

// Call is one API call as the fake received it, for an observer (Observe).
type Call struct {
	// Service is the service, by its SigV4 name (ec2, autoscaling, iam, route53, s3); Region the signed region.
	Service, Region string
	// Op is the operation, as Calls counts it ("DescribeVolumes").
	Op string
	// Params are the parameters of an EC2, Auto Scaling or IAM (Query) call; nil for Route53 and S3. They must
	// not be changed.
	Params url.Values
	// Throttled says it was answered with a throttling error (Faults).
	Throttled bool
}

// Observe makes fn see every API call the fake receives (nil: none), as it arrives, from the goroutine that
// answers it and without the fake's lock held: fn must be safe for concurrent use and may call the fake.
func (s *Server) Observe(fn func(Call)) { s.ctl.Observe(fn) }

// ResetCalls zeroes the call counts and the count of throttled calls.
func (s *Server) ResetCalls() { s.ctl.ResetCalls() }

// Mutating reports whether an operation changes something: every one that is not Describe*, List*, Get* or
// Head* (nor a count of /__fake/calls that is not an operation's, such as fakecontrol.ThrottledKey).
func Mutating(op string) bool {
	for _, p := range []string{"Describe", "List", "Get", "Head", "__"} {
		if strings.HasPrefix(op, p) {
			return false
		}
	}
	return true
}

// The services, by the name SigV4 signs for.
const (
	svcEC2         = "ec2"
	svcAutoScaling = "autoscaling"
	svcIAM         = "iam"
	svcRoute53     = "route53"
	svcS3          = "s3"
)

// credentialScope finds the signed service in an Authorization header:
// "AWS4-HMAC-SHA256 Credential=AKID/20261123/us-east-1/ec2/aws4_request, ...".
var credentialScope = regexp.MustCompile(`Credential=[^/]+/\d{8}/([^/]+)/([^/]+)/aws4_request`)

// ServeHTTP dispatches a request: the control endpoints, IMDS, Route53 (by its path), the Query services (by the
// service of the signature), and S3 for the rest.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.URL.Path, "/__fake/"):
		s.control.ServeHTTP(w, r)
		return
	case strings.HasPrefix(r.URL.Path, "/latest/"):
		s.serveIMDS(w, r, "")
		return
	case strings.HasPrefix(r.URL.Path, "/2013-04-01/"):
		s.serveAPI(w, r, svcRoute53, route53Operation(r), nil, func(region string) { s.serveRoute53(w, r) })
		return
	}
	service, region := svcS3, "us-east-1"
	if m := credentialScope.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		region, service = m[1], m[2]
	}
	switch service {
	case svcEC2, svcAutoScaling, svcIAM:
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		form, err := url.ParseQuery(string(body))
		if err != nil {
			writeError(w, service, errorf("MalformedQueryString", "%v", err))
			return
		}
		for k, vs := range r.URL.Query() {
			form[k] = append(form[k], vs...)
		}
		action := form.Get("Action")
		s.serveAPI(w, r, service, action, form, func(region string) {
			var result any
			var err error
			switch service {
			case svcEC2:
				result, err = s.ec2Action(region, action, form)
			case svcAutoScaling:
				result, err = s.asgAction(region, action, form)
			case svcIAM:
				result, err = s.iamAction(action, form)
			}
			if err != nil {
				writeError(w, service, err)
				return
			}
			writeQueryResult(w, service, action, result)
		})
		_ = region
	default:
		s.serveAPI(w, r, svcS3, s3Operation(r), nil, func(string) { s.s3.ServeHTTP(w, r) })
	}
}

// serveAPI counts the call, applies the fault injection, and runs handle with s.mu held (S3's own handler runs
// without it: gofakes3 has its own locking).
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request, service, op string, params url.Values, handle func(region string)) {
	region := "us-east-1"
	if m := credentialScope.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		region = m[1]
	}
	a := s.ctl.Begin(op, service)
	defer a.End()
	a.Observed(Call{Service: service, Region: region, Op: op, Params: params, Throttled: a.Fate == fakecontrol.Throttle})
	a.Wait()
	if a.Fate != fakecontrol.Pass {
		writeError(w, service, faultError(service, a.Fate))
		return
	}
	if service == svcS3 {
		handle(region)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	handle(region)
}

// xmlns are the namespaces of the Query services' answers.
var xmlns = map[string]string{
	svcEC2:         "http://ec2.amazonaws.com/doc/2016-11-15/",
	svcAutoScaling: "http://autoscaling.amazonaws.com/doc/2011-01-01/",
	svcIAM:         "https://iam.amazonaws.com/doc/2010-05-08/",
	svcRoute53:     "https://route53.amazonaws.com/doc/2013-04-01/",
}

// writeQueryResult writes a Query answer. EC2's: <ActionResponse><requestId/>...result's fields...</ActionResponse>.
// Auto Scaling's and IAM's: <ActionResponse><ActionResult>...</ActionResult><ResponseMetadata/></ActionResponse>.
// result is a struct whose fields carry xml tags; nil writes an empty result.
func writeQueryResult(w http.ResponseWriter, service, action string, result any) {
	var b bytes.Buffer
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	start := xml.StartElement{Name: xml.Name{Local: action + "Response"}, Attr: []xml.Attr{{Name: xml.Name{Local: "xmlns"}, Value: xmlns[service]}}}
	var err error
	if service == svcEC2 {
		if result == nil {
			result = struct {
				Return bool `xml:"return"`
			}{true}
		}
		err = enc.EncodeElement(result, start)
	} else {
		err = enc.EncodeToken(start)
		if err == nil && result != nil {
			err = enc.EncodeElement(result, xml.StartElement{Name: xml.Name{Local: action + "Result"}})
		}
		if err == nil {
			err = enc.EncodeElement(struct {
				RequestID string `xml:"RequestId"`
			}{"fake-request"}, xml.StartElement{Name: xml.Name{Local: "ResponseMetadata"}})
		}
		if err == nil {
			err = enc.EncodeToken(start.End())
		}
	}
	if err == nil {
		err = enc.Flush()
	}
	if err != nil {
		http.Error(w, "fakeaws: encoding the answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.Write(b.Bytes())
}

// writeXML writes a REST-XML answer (Route53).
func writeXML(w http.ResponseWriter, status int, v any) {
	b, err := xml.Marshal(v)
	if err != nil {
		http.Error(w, "fakeaws: encoding the answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	w.Write([]byte(xml.Header))
	w.Write(b)
}

// writeError writes err in the service's error format; an error that is not an *Error is an InternalError (500).
func writeError(w http.ResponseWriter, service string, err error) {
	e, ok := err.(*Error)
	if !ok {
		e = &Error{Status: http.StatusInternalServerError, Code: "InternalError", Message: err.Error()}
	}
	var body string
	switch service {
	case svcEC2:
		body = fmt.Sprintf(`<Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>fake-request</RequestID></Response>`,
			esc(e.Code), esc(e.Message))
	case svcS3:
		body = fmt.Sprintf(`<Error><Code>%s</Code><Message>%s</Message><RequestId>fake-request</RequestId></Error>`, esc(e.Code), esc(e.Message))
	default:
		typ := "Sender"
		if e.Status >= 500 {
			typ = "Receiver"
		}
		body = fmt.Sprintf(`<ErrorResponse xmlns="%s"><Error><Type>%s</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>fake-request</RequestId></ErrorResponse>`,
			xmlns[service], typ, esc(e.Code), esc(e.Message))
	}
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(e.Status)
	w.Write([]byte(xml.Header + body))
}

func esc(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
