package fakegce

import (
	"testing"

	compute "google.golang.org/api/compute/v1"
)

// TestZonesAndRegionsList: the lists of zones and regions name no zone or region of their own, and are not
// refused as an unknown one.
func TestZonesAndRegionsList(t *testing.T) {
	_, svc, _, _ := newClients(t)
	const proj = "p"
	zones := must[*compute.ZoneList](t)(svc.Zones.List(proj).Do())
	regions := must[*compute.RegionList](t)(svc.Regions.List(proj).Do())
	if len(zones.Items) == 0 || len(regions.Items) == 0 {
		t.Errorf("zones.list answered %d zones, regions.list %d regions: want some of each", len(zones.Items), len(regions.Items))
	}
	if _, err := svc.Zones.Get(proj, "nowhere").Do(); err == nil {
		t.Errorf("zones.get of a zone not named like one: no error")
	}
}
