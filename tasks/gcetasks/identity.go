package gcetasks

import (
	"context"
	"fmt"
	"strings"

	"cloud.google.com/go/compute/metadata"

	"kubeup.dev/kubeup/tasks/volumetasks"
)

// InstanceIdentity returns the instance this process runs on, from the metadata server (GCE_METADATA_HOST
// points it elsewhere): the instance's name (its NodeID: what attachDisk and a disk's users name), internal and
// external addresses (the external one "" when it has none), its zone ("us-central1-a") and project.
func InstanceIdentity(ctx context.Context) (me volumetasks.Holder, zone, project string, err error) {
	c := metadata.NewClient(nil)
	get := func(path string) (string, error) {
		v, err := c.GetWithContext(ctx, path)
		if err != nil {
			return "", fmt.Errorf("reading %s from the metadata server: %w", path, err)
		}
		return v, nil
	}
	if me.NodeID, err = get("instance/name"); err != nil {
		return me, "", "", err
	}
	z, err := get("instance/zone") // projects/<number>/zones/<zone>
	if err != nil {
		return me, "", "", err
	}
	zone = lastSegment(z)
	if me.InternalIP, err = get("instance/network-interfaces/0/ip"); err != nil {
		return me, "", "", err
	}
	if ip, err := c.GetWithContext(ctx, "instance/network-interfaces/0/access-configs/0/external-ip"); err == nil {
		me.ExternalIP = ip
	}
	if project, err = c.GetWithContext(ctx, "project/project-id"); err != nil || project == "" {
		project = projectOf(z) // the project's number: the API takes it for its id
	}
	return me, zone, project, nil
}

// projectOf is the project of a resource path ("projects/p/zones/z" → "p").
func projectOf(path string) string {
	rest, ok := strings.CutPrefix(path, "projects/")
	if !ok {
		return ""
	}
	p, _, _ := strings.Cut(rest, "/")
	return p
}
