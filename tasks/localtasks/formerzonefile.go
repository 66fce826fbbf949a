package localtasks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"kubeup.dev/kubeup/engine"
)

// FormerZoneFile is a zone file a cluster kept its DNS records in before its spec named another
// (spec.local.zoneFile changed): it must hold none of the cluster's records any more. Find lists the records of
// the cluster it still holds (by name: Cluster and the names under it, except those of Others, the clusters named
// under it); Render removes them, leaving every other record, and the file, as they are. The records themselves
// are written to the file the spec names now by the graph's Record tasks: the cluster's records move.
type FormerZoneFile struct {
	// Path is the former zone file, and the task's name.
	Path string
	// Zone is the DNS zone the file holds.
	Zone string `kubeup:"-"`
	// Cluster names the cluster whose records go; Others are the other clusters of the state store.
	Cluster string   `kubeup:"-"`
	Others  []string `kubeup:"-"`
	// Records are the cluster's records the file holds ("DNSRecord/api.demo.example.com/A"): none in a task.
	Records []string `kubeup:"nilempty"`
}

var (
	_ engine.Resource[*FormerZoneFile, *Cloud] = (*FormerZoneFile)(nil)
	_ engine.Renderer[*FormerZoneFile, *Cloud] = (*FormerZoneFile)(nil)
)

func (f *FormerZoneFile) Key() engine.Key     { return engine.Key{Type: "FormerZoneFile", Name: f.Path} }
func (f *FormerZoneFile) Deps() []engine.Task { return nil }

// Find lists the cluster's records in the file; a file that is gone holds none.
func (f *FormerZoneFile) Find(ctx context.Context, _ *Cloud) (*FormerZoneFile, error) {
	z, err := NewZoneFile(f.Path, f.Zone)
	if err != nil {
		return nil, engine.Terminal(err)
	}
	keys, err := z.DeleteCluster(ctx, f.Cluster, f.Others, true)
	if errors.Is(err, fs.ErrNotExist) {
		keys, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &FormerZoneFile{Path: f.Path, Records: keys}, nil
}

func (f *FormerZoneFile) CheckChanges(actual, expected, changes *FormerZoneFile) error {
	if len(expected.Records) != 0 {
		return fmt.Errorf("former zone file %s: Records must be empty: the task only removes", expected.Path)
	}
	return nil
}

// Render removes the cluster's records from the file.
func (f *FormerZoneFile) Render(ctx context.Context, _ *Cloud, actual, expected, changes *FormerZoneFile) error {
	z, err := NewZoneFile(expected.Path, expected.Zone)
	if err != nil {
		return engine.Terminal(err)
	}
	removed, err := z.DeleteCluster(ctx, expected.Cluster, expected.Others, false)
	if err != nil {
		return err
	}
	engine.Logger(ctx).Info("removed the cluster's records from the zone file it used before", "file", expected.Path, "records", len(removed))
	return nil
}
