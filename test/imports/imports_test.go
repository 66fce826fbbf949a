// Package imports holds the module's import rules (docs/architecture.md, "Packages"): what each layer must not
// link. It lives in test/ because it checks the module as a whole, as the other packages there do, and belongs to
// none of the packages it checks; it is an ordinary test, so `go test ./...` (make test) runs it.
package imports

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "kubeup.dev/kubeup"

// sdks are the import path prefixes of the cloud SDKs, gRPC and go-systemd.
var sdks = []string{
	"github.com/aws/",
	"google.golang.org/api/",
	"google.golang.org/grpc",
	"cloud.google.com/",
	"github.com/coreos/go-systemd/",
}

// cloudSDKs are the import path prefixes of the cloud SDKs and gRPC (which Google's SDK links).
var cloudSDKs = []string{"github.com/aws/", "google.golang.org/api/", "google.golang.org/grpc", "cloud.google.com/"}

// awsSDK and googleSDK are what a build for the other cloud must not link.
var (
	awsSDK    = []string{"github.com/aws/"}
	googleSDK = []string{"google.golang.org/api/", "google.golang.org/grpc", "cloud.google.com/"}
)

// domain is kubeup's packages above the engine.
var domain = []string{
	module + "/model",
	module + "/tasks/",
	module + "/cloudup",
	module + "/nodeup",
	module + "/protokube",
	module + "/statestore",
	module + "/cmd/",
}

// rule says that the packages matching from (and their subpackages) must not depend, directly or not, on any
// package matching one of notOn. A pattern ending in '/' is a prefix; one ending in '$' is that package alone, not
// its subpackages; any other matches a package and its subpackages.
type rule struct {
	from  []string
	notOn []string
	why   string
}

var rules = []rule{
	{[]string{module + "/model"}, append([]string{module + "/tasks/"}, sdks...),
		"model is pure: API types, defaults, validation, flags, pods, units and node configuration; the graphs live in nodeup/nodegraph and cloudup/cloudgraph"},
	{[]string{module + "/model"}, []string{module + "/cloudup", module + "/nodeup", module + "/protokube", module + "/cmd/"},
		"model is below every binary's code"},
	{[]string{module + "/nodeup", module + "/protokube"}, []string{module + "/cloudup"},
		"the node binaries link the node side only: cloudup is the operator's"},
	{[]string{module + "/engine"}, domain,
		"engine knows nothing of the domain"},
	{[]string{module + "/statestore"}, []string{module + "/engine"},
		"the state store is read by both sides without the engine"},
	{[]string{module + "/statestore$"}, sdks,
		"statestore links no cloud SDK: its bucket schemes are packages of their own (statestore/s3store, statestore/gsstore) that a binary links by importing them"},
	{[]string{module + "/statestore/s3store"}, append([]string{
		"github.com/aws/aws-sdk-go-v2/service/ec2", "github.com/aws/aws-sdk-go-v2/service/autoscaling",
		"github.com/aws/aws-sdk-go-v2/service/iam", "github.com/aws/aws-sdk-go-v2/service/route53",
		"google.golang.org/api/", "cloud.google.com/"}, module+"/internal/awssdk/allservices"),
		"the S3 state store links the SDK's core and S3 only (internal/awssdk, not allservices): a binary whose store is S3 links no other AWS service"},
	{[]string{module + "/statestore/gsstore"}, []string{"github.com/aws/"},
		"the GCS state store links Google's SDK only"},
	{[]string{module + "/cloudup"}, append([]string{module + "/tasks/awstasks", module + "/tasks/gcetasks"}, cloudSDKs...),
		"cloudup is the operator's side common to all clouds: a cloud's own code and SDK live in its provider's package (providers/<cloud>), which the main links"},
	{[]string{module + "/cmd/"}, []string{module + "/tasks/kubetasks/kubetest"},
		"kubetest is the tests' fake kube-apiserver: no binary links it"},
	{[]string{module + "/cmd/nodeup$", module + "/cmd/protokube$"}, cloudSDKs,
		"the local provider's node binaries link no cloud SDK (docs/architecture.md, \"Providers\")"},
	{[]string{module + "/cmd/nodeup-aws$", module + "/cmd/protokube-aws$"}, googleSDK,
		"an aws machine's node binaries link the AWS SDK only"},
	{[]string{module + "/cmd/nodeup-gce$", module + "/cmd/protokube-gce$"}, awsSDK,
		"a gce machine's node binaries link Google's SDK only"},
	{[]string{module + "/cmd/nodeup-aws$"}, []string{
		"github.com/aws/aws-sdk-go-v2/service/ec2", "github.com/aws/aws-sdk-go-v2/service/autoscaling",
		"github.com/aws/aws-sdk-go-v2/service/iam", "github.com/aws/aws-sdk-go-v2/service/route53"},
		"nodeup reads the state store and nothing else of the cloud: on aws, S3 only"},
}

// matches reports whether the import path p matches pattern (see rule).
func matches(p, pattern string) bool {
	if pkg, ok := strings.CutSuffix(pattern, "$"); ok {
		return p == pkg
	}
	if strings.HasSuffix(pattern, "/") {
		return strings.HasPrefix(p, pattern)
	}
	return p == pattern || strings.HasPrefix(p, pattern+"/")
}

func matchesAny(p string, patterns []string) bool {
	return slices.ContainsFunc(patterns, func(pattern string) bool { return matches(p, pattern) })
}

// listed is what go list says of a package.
type listed struct {
	ImportPath string
	Imports    []string
	Standard   bool
}

// graph returns the import graph of the module's packages and every package they depend on (without tests, as
// the binaries link them), by import path.
func graph(t *testing.T) map[string][]string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the import rules need the go command: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-deps", "-json=ImportPath,Imports,Standard", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	g := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list's output: %v", err)
		}
		if !p.Standard {
			g[p.ImportPath] = p.Imports
		}
	}
	return g
}

// violations returns, for each package matching r.from, the first import chain (shortest, breadth first) that
// reaches a package matching r.notOn, as "a -> b -> c".
func violations(g map[string][]string, r rule) []string {
	var out []string
	for _, root := range slices.Sorted(func(yield func(string) bool) {
		for p := range g {
			if matchesAny(p, r.from) && !yield(p) {
				return
			}
		}
	}) {
		parent := map[string]string{root: ""}
		queue := []string{root}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			if p != root && matchesAny(p, r.notOn) {
				chain := []string{p}
				for q := parent[p]; q != ""; q = parent[q] {
					chain = append(chain, q)
				}
				slices.Reverse(chain)
				out = append(out, strings.Join(chain, " -> "))
				break
			}
			for _, next := range g[p] {
				if _, seen := parent[next]; !seen {
					parent[next] = p
					queue = append(queue, next)
				}
			}
		}
	}
	return out
}

// TestImportRules fails, naming the import chain, when a package depends on what its layer must not link.
func TestImportRules(t *testing.T) {
	g := graph(t)
	for _, r := range rules {
		checked := false
		for p := range g {
			checked = checked || matchesAny(p, r.from)
		}
		if !checked {
			t.Errorf("no package matches %v: the rule %q checks nothing", r.from, r.why)
			continue
		}
		for _, v := range violations(g, r) {
			t.Errorf("%s\n\tbreaks the rule: %s", v, r.why)
		}
	}
}

// TestViolationsNamesTheChain checks the checker on a graph of its own: a chain through an allowed package is
// found and named, a clean graph has none.
func TestViolationsNamesTheChain(t *testing.T) {
	g := map[string][]string{
		module + "/model":                          {module + "/engine", module + "/internal/gcelabels"},
		module + "/internal/gcelabels":             {"github.com/aws/aws-sdk-go-v2/service/ec2"},
		module + "/engine":                         nil,
		"github.com/aws/aws-sdk-go-v2/service/ec2": nil,
	}
	r := rules[0]
	got := violations(g, r)
	want := []string{module + "/model -> " + module + "/internal/gcelabels -> github.com/aws/aws-sdk-go-v2/service/ec2"}
	if !slices.Equal(got, want) {
		t.Errorf("violations = %q, want %q", got, want)
	}
	g[module+"/internal/gcelabels"] = nil
	if got := violations(g, r); len(got) != 0 {
		t.Errorf("violations of a clean graph = %q, want none", got)
	}
	if !matches(module+"/nodeup/nodegraph", module+"/nodeup") || matches(module+"/nodeupx", module+"/nodeup") {
		t.Error("a pattern must match its package and subpackages, not a package whose name it starts")
	}
	if !matches(module+"/statestore", module+"/statestore$") || matches(module+"/statestore/s3store", module+"/statestore$") {
		t.Error("a pattern ending in $ must match its package alone")
	}
}
