package imports

import "testing"

// cloudupRule: cloudup and its subpackages link no cloud's own code: a cloud's tasks and SDK are its provider's
// (providers/<cloud>), which the main links by importing it.
var cloudupRule = rule{
	from:  []string{module + "/cloudup"},
	notOn: []string{module + "/tasks/awstasks", module + "/tasks/gcetasks", "github.com/aws/", "google.golang.org/api/", "cloud.google.com/"},
	why:   "cloudup is the operator's side common to all clouds: a cloud's own code and SDK live in its provider's package (providers/<cloud>), which the main links",
}

// TestCloudupLinksNoCloud fails, naming the import chain, when cloudup or a package of it (cloudgraph) depends on
// a cloud's task package or SDK. The state store's dependencies are not followed: its s3:// and gs:// schemes
// are issue 25's step of their own (statestore/s3store, statestore/gsstore, registered by the mains); once it
// links no SDK, this rule joins rules and the cut goes.
func TestCloudupLinksNoCloud(t *testing.T) {
	g := graph(t)
	for p := range g {
		if matches(p, module+"/statestore") {
			g[p] = nil
		}
	}
	if _, ok := g[module+"/cloudup/cloudgraph"]; !ok {
		t.Fatal("go list lists no cloudup/cloudgraph: the rule checks nothing")
	}
	for _, v := range violations(g, cloudupRule) {
		t.Errorf("%s\n\tbreaks the rule: %s", v, cloudupRule.why)
	}
}
