package localtasks

import (
	"context"
	"errors"
	"time"

	"kubeup.dev/kubeup/tasks/dnstasks"
	"kubeup.dev/kubeup/tasks/storetasks"
)

// Cloud is the world of the local provider's cloud graph: the volume pool, the zone file that holds the
// cluster's DNS records, and the state store. The tasks share it; its parts hold the locks that make concurrent
// tasks, and concurrent kubeup processes, safe.
type Cloud struct {
	Pool *Pool
	// Zone is nil when the cluster has no DNS zone (its names resolve some other way): a DNS record task then
	// fails with a clear error.
	Zone  *ZoneFile
	Store storetasks.Store

	// loops, now and mounts are the machine's loop devices, clock and mount table, for DeleteOwned; nil:
	// losetup, time.Now and mountPointsOf. Tests replace them.
	loops  loopDevices
	now    func() time.Time
	mounts func(dev string) []string
}

func (c *Cloud) mountPoints(dev string) []string {
	if c.mounts == nil {
		return mountPointsOf(dev)
	}
	return c.mounts(dev)
}

func (c *Cloud) loopDevices() loopDevices {
	if c.loops == nil {
		return losetup{}
	}
	return c.loops
}

func (c *Cloud) clock() time.Time {
	if c.now == nil {
		return time.Now()
	}
	return c.now()
}

var (
	_ dnstasks.World   = (*Cloud)(nil)
	_ storetasks.World = (*Cloud)(nil)
)

// NewCloud returns the local cloud with its volumes in poolDir and the records of dnsZone ("example.com") in
// zoneFile. With zoneFile and dnsZone both empty, the cloud has no DNS. Nothing is read or written yet.
func NewCloud(poolDir, zoneFile, dnsZone string, store storetasks.Store) (*Cloud, error) {
	pool, err := NewPool(poolDir)
	if err != nil {
		return nil, err
	}
	c := &Cloud{Pool: pool, Store: store}
	if zoneFile == "" && dnsZone == "" {
		return c, nil
	}
	if c.Zone, err = NewZoneFile(zoneFile, dnsZone); err != nil {
		return nil, err
	}
	return c, nil
}

// DNSProvider returns the zone file, or a provider whose every call fails when the cloud has no DNS zone.
func (c *Cloud) DNSProvider() dnstasks.Provider {
	if c.Zone == nil {
		return noDNS{}
	}
	return c.Zone
}

// StateStore returns the state store.
func (c *Cloud) StateStore() storetasks.Store { return c.Store }

// errNoDNS is terminal: configuration, not a passing failure.
var errNoDNS = errors.New("the local cloud has no DNS zone: give it a zone file and a DNS zone, or leave DNS records out of the graph")

// noDNS is the DNS provider of a cloud without a zone.
type noDNS struct{}

func (noDNS) Get(ctx context.Context, name, rrtype string) (*dnstasks.RecordSet, error) {
	return nil, errNoDNS
}

func (noDNS) Upsert(ctx context.Context, rs dnstasks.RecordSet) error { return errNoDNS }

func (noDNS) Delete(ctx context.Context, name, rrtype string) error { return errNoDNS }

// List has nothing to list: a cloud without DNS manages no records.
func (noDNS) List(ctx context.Context) ([]dnstasks.RecordSet, error) { return nil, nil }
