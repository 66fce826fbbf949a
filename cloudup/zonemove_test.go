package cloudup

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/localtasks"
)

// TestZoneFileChangeMovesTheRecords: two clusters share the default zone file; one's spec.local.zoneFile moves.
// Its dry run says which records leave the old file (a change of the plan, in text and JSON) and changes nothing;
// its apply removes them from the old file (the other cluster's stay) and writes them to the new one; then there
// is nothing more to do.
func TestZoneFileChangeMovesTheRecords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cs := openStore(t, "file://"+filepath.Join(dir, "s"))
	var out bytes.Buffer
	for _, name := range []string{demo, "other.example.com"} {
		c, igs, err := model.NewCluster(model.NewClusterOptions{Name: name, CloudProvider: model.CloudLocal, Zones: []string{"a"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.Create(ctx, "create", c, igs); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.Update(ctx, name, UpdateOptions{Out: &out, Apply: true}); err != nil {
			t.Fatal(err)
		}
	}
	oldPath := filepath.Join(dir, "s-local", "dns", "example.com.zone")
	names := func(path string) string {
		t.Helper()
		z, err := localtasks.NewZoneFile(path, "example.com")
		if err != nil {
			t.Fatal(err)
		}
		sets, err := z.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, rs := range sets {
			b.WriteString(rs.Name + " ")
		}
		return b.String()
	}
	if got := names(oldPath); !strings.Contains(got, "api.demo.example.com") || !strings.Contains(got, "api.other.example.com") {
		t.Fatalf("the shared zone file holds %s", got)
	}

	s, err := cs.Get(ctx, demo)
	if err != nil {
		t.Fatal(err)
	}
	newPath := filepath.Join(dir, "dns2", "example.com.zone")
	s.Cluster.Spec.Local = &model.LocalSpec{ZoneFile: newPath}
	if _, err := cs.Replace(ctx, "test", &model.Objects{Cluster: s.Cluster}, ReplaceOptions{}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(oldPath)

	out.Reset()
	if _, err := cs.Update(ctx, demo, UpdateOptions{Out: &out}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"  FormerZoneFile/" + oldPath + "\n",
		"    Records    [DNSRecord/api.demo.example.com/A, DNSRecord/api.internal.demo.example.com/A] -> []\n", "Will create resources"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the dry run lacks %q:\n%s", want, &out)
		}
	}
	if after, _ := os.ReadFile(oldPath); !bytes.Equal(before, after) {
		t.Error("the dry run changed the old zone file")
	}
	out.Reset()
	if _, err := cs.Update(ctx, demo, UpdateOptions{Out: &out, JSON: true}); err != nil || !json.Valid(out.Bytes()) {
		t.Errorf("the JSON dry run: %v, not only JSON:\n%s", err, &out)
	}
	if !strings.Contains(out.String(), `"FormerZoneFile/`+oldPath+`"`) || !strings.Contains(out.String(), "DNSRecord/api.internal.demo.example.com/A") {
		t.Errorf("the JSON dry run does not carry the records' removal:\n%s", &out)
	}

	out.Reset()
	if _, err := cs.Update(ctx, demo, UpdateOptions{Out: &out, Apply: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "modify FormerZoneFile/"+oldPath+"\n") {
		t.Errorf("the apply does not say what it removed:\n%s", &out)
	}
	if got := names(oldPath); strings.Contains(got, "demo.example.com") || !strings.Contains(got, "api.other.example.com") {
		t.Errorf("after the move the old zone file holds %s; want other.example.com's records alone", got)
	}
	if got := names(newPath); !strings.Contains(got, "api.demo.example.com") || strings.Contains(got, "other") {
		t.Errorf("after the move the new zone file holds %s; want demo.example.com's records", got)
	}
	out.Reset()
	if plan, err := cs.Update(ctx, demo, UpdateOptions{Out: &out}); err != nil || !plan.Empty() || strings.Contains(out.String(), "remove") {
		t.Errorf("after the move: %v\n%s\nwant no changes", err, &out)
	}
	if plan, err := cs.Update(ctx, "other.example.com", UpdateOptions{Out: &out}); err != nil || !plan.Empty() {
		t.Errorf("the other cluster after the move: %v\n%s\nwant no changes", err, &out)
	}
}

// TestDeleteAfterAZoneFileChange: the zone file changed in the spec but no update applied it; delete removes the
// cluster's records from the file the last update wrote, which the spec no longer names.
func TestDeleteAfterAZoneFileChange(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cs := openStore(t, "file://"+filepath.Join(dir, "s"))
	c, igs, err := model.NewCluster(model.NewClusterOptions{Name: demo, CloudProvider: model.CloudLocal, Zones: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Create(ctx, "create", c, igs); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := cs.Update(ctx, demo, UpdateOptions{Out: &out, Apply: true}); err != nil {
		t.Fatal(err)
	}
	s, err := cs.Get(ctx, demo)
	if err != nil {
		t.Fatal(err)
	}
	s.Cluster.Spec.Local = &model.LocalSpec{ZoneFile: filepath.Join(dir, "dns2", "example.com.zone")}
	if _, err := cs.Replace(ctx, "test", &model.Objects{Cluster: s.Cluster}, ReplaceOptions{}); err != nil {
		t.Fatal(err)
	}
	oldPath := filepath.Join(dir, "s-local", "dns", "example.com.zone")
	out.Reset()
	if err := cs.Delete(ctx, demo, DeleteOptions{Out: &out}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "DNSRecord/api.demo.example.com/A (in "+oldPath+")") {
		t.Errorf("delete does not list the records of the old zone file:\n%s", &out)
	}
	if err := cs.Delete(ctx, demo, DeleteOptions{Out: &out, Apply: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "s-local")); !os.IsNotExist(err) {
		t.Errorf("the old zone file (or its directory) is left after delete: %v", err)
	}
}
