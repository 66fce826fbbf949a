package fakeaws

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// cliChange is a change batch as the AWS CLI takes it in JSON.
func cliChange(t *testing.T, action, name, typ string, values ...string) string {
	t.Helper()
	type rr struct {
		Value string `json:"Value"`
	}
	var records []rr
	for _, v := range values {
		records = append(records, rr{v})
	}
	b, err := json.Marshal(map[string]any{"Changes": []any{map[string]any{"Action": action,
		"ResourceRecordSet": map[string]any{"Name": name, "Type": typ, "TTL": 60, "ResourceRecords": records}}}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAWSCLIRoute53IAMS3 makes a hosted zone, records, an instance profile and a bucket with objects with the AWS
// CLI, and checks its answers. The three run in parallel: the CLI takes a second or more to start.
func TestAWSCLIRoute53IAMS3(t *testing.T) {
	t.Parallel()  // beside TestAWSCLIEC2: each waits on the CLI more than on the fake
	awsCLIPath(t) // CannotRun before the subtests when there is no CLI
	s := New()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	s.SetChangePendingPolls(1)
	t.Run("all", func(t *testing.T) {
		t.Run("route53", func(t *testing.T) { t.Parallel(); cliRoute53(t, newAWSCLI(t, srv.URL)) })
		t.Run("iam", func(t *testing.T) { t.Parallel(); cliIAM(t, newAWSCLI(t, srv.URL)) })
		t.Run("s3", func(t *testing.T) { t.Parallel(); cliS3(t, newAWSCLI(t, srv.URL)) })
	})
	calls := s.Calls()
	for _, op := range []string{"CreateHostedZone", "ListHostedZonesByName", "ChangeResourceRecordSets", "GetChange", "ListResourceRecordSets",
		"CreateRole", "CreateInstanceProfile", "AddRoleToInstanceProfile", "GetInstanceProfile", "CreateBucket", "PutObject", "ListObjectsV2", "GetObject"} {
		if calls[op] == 0 {
			t.Errorf("no %s counted: %v", op, calls)
		}
	}
}

// cliRoute53: a hosted zone example.com, A and TXT records upserted, listed (in pages too), the change polled.
func cliRoute53(t *testing.T, aws *awsCLI) {

	var zone struct {
		Location      string
		HostedZone    struct{ Id, Name, CallerReference string }
		ChangeInfo    struct{ Id, Status string }
		DelegationSet struct{ NameServers []string }
	}
	aws.json(&zone, "route53", "create-hosted-zone", "--name", "example.com", "--caller-reference", "cli-1")
	if !strings.HasPrefix(zone.HostedZone.Id, "/hostedzone/Z") || zone.HostedZone.Name != "example.com." ||
		zone.Location != "https://route53.amazonaws.com/2013-04-01"+zone.HostedZone.Id || zone.ChangeInfo.Status != "PENDING" ||
		len(zone.DelegationSet.NameServers) != 4 {
		t.Errorf("create-hosted-zone: %+v", zone)
	}
	if _, err := aws.run("route53", "create-hosted-zone", "--name", "example.com", "--caller-reference", "cli-1"); err == nil ||
		!strings.Contains(err.Error(), "HostedZoneAlreadyExists") {
		t.Errorf("create-hosted-zone with a used caller reference: %v; want HostedZoneAlreadyExists", err)
	}
	var byName struct {
		HostedZones []struct{ Id, Name string }
	}
	aws.json(&byName, "route53", "list-hosted-zones-by-name", "--dns-name", "example.com", "--max-items", "1")
	if len(byName.HostedZones) != 1 || byName.HostedZones[0].Id != zone.HostedZone.Id {
		t.Errorf("list-hosted-zones-by-name: %+v", byName)
	}

	var changed struct{ ChangeInfo struct{ Id, Status string } }
	batch := `{"Comment": "api", "Changes": [
		{"Action": "UPSERT", "ResourceRecordSet": {"Name": "api.example.com", "Type": "A", "TTL": 60, "ResourceRecords": [{"Value": "192.0.2.1"}, {"Value": "192.0.2.2"}]}},
		{"Action": "UPSERT", "ResourceRecordSet": {"Name": "API.example.com.", "Type": "TXT", "TTL": 60, "ResourceRecords": [{"Value": "\"owner=kubeup\""}]}}]}`
	aws.json(&changed, "route53", "change-resource-record-sets", "--hosted-zone-id", zone.HostedZone.Id, "--change-batch", batch)
	if !strings.HasPrefix(changed.ChangeInfo.Id, "/change/C") || changed.ChangeInfo.Status != "PENDING" {
		t.Errorf("change-resource-record-sets: %+v", changed)
	}
	var status []string
	for range 2 {
		var ch struct{ ChangeInfo struct{ Id, Status string } }
		aws.json(&ch, "route53", "get-change", "--id", changed.ChangeInfo.Id)
		status = append(status, ch.ChangeInfo.Status)
	}
	if diff := cmp.Diff([]string{"PENDING", "INSYNC"}, status); diff != "" {
		t.Errorf("get-change twice, one pending poll (-want +got):\n%s", diff)
	}

	_, err := aws.run("route53", "change-resource-record-sets", "--hosted-zone-id", zone.HostedZone.Id,
		"--change-batch", cliChange(t, "CREATE", "api.example.com", "A", "192.0.2.3"))
	if err == nil || !strings.Contains(err.Error(), "InvalidChangeBatch") ||
		!strings.Contains(err.Error(), "Tried to create resource record set [name='api.example.com.', type='A'] but it already exists") {
		t.Errorf("CREATE of an existing record: %v; want InvalidChangeBatch", err)
	}

	type recordSets struct {
		ResourceRecordSets []struct {
			Name, Type      string
			TTL             int
			ResourceRecords []struct{ Value string }
		}
	}
	list := func(args ...string) []string {
		var rs recordSets
		aws.json(&rs, append([]string{"route53", "list-resource-record-sets", "--hosted-zone-id", zone.HostedZone.Id}, args...)...)
		var got []string
		for _, r := range rs.ResourceRecordSets {
			line := r.Name + " " + r.Type
			if r.Type != "NS" && r.Type != "SOA" {
				for _, v := range r.ResourceRecords {
					line += " " + v.Value
				}
			}
			got = append(got, line)
		}
		return got
	}
	want := []string{"example.com. NS", "example.com. SOA", "api.example.com. A 192.0.2.1 192.0.2.2", `api.example.com. TXT "owner=kubeup"`}
	if diff := cmp.Diff(want, list()); diff != "" {
		t.Errorf("list-resource-record-sets (-want +got):\n%s", diff)
	}
	// The CLI pages by itself through MaxItems, StartRecordName and StartRecordType.
	if diff := cmp.Diff(want, list("--page-size", "1")); diff != "" {
		t.Errorf("list-resource-record-sets --page-size 1 (-want +got):\n%s", diff)
	}

}

// cliIAM: an instance profile, as a user makes one.
func cliIAM(t *testing.T, aws *awsCLI) {
	aws.mustRun("iam", "create-role", "--role-name", "kubeup", "--assume-role-policy-document",
		`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}`)
	var created struct {
		InstanceProfile struct{ InstanceProfileName, Arn string }
	}
	aws.json(&created, "iam", "create-instance-profile", "--instance-profile-name", "kubeup")
	aws.mustRun("iam", "add-role-to-instance-profile", "--instance-profile-name", "kubeup", "--role-name", "kubeup")
	var got struct {
		InstanceProfile struct {
			InstanceProfileName, Arn string
			Roles                    []struct{ RoleName string }
		}
	}
	aws.json(&got, "iam", "get-instance-profile", "--instance-profile-name", "kubeup")
	if got.InstanceProfile.Arn != "arn:aws:iam::"+AccountID+":instance-profile/kubeup" || got.InstanceProfile.Arn != created.InstanceProfile.Arn ||
		len(got.InstanceProfile.Roles) != 1 || got.InstanceProfile.Roles[0].RoleName != "kubeup" {
		t.Errorf("get-instance-profile: %+v", got)
	}
	if _, err := aws.run("iam", "get-instance-profile", "--instance-profile-name", "none"); err == nil || !strings.Contains(err.Error(), "NoSuchEntity") {
		t.Errorf("get-instance-profile of none: %v; want NoSuchEntity", err)
	}

}

// cliS3: a bucket and objects, with the s3 commands.
func cliS3(t *testing.T, aws *awsCLI) {
	local := filepath.Join(aws.dir, "config")
	if err := os.WriteFile(local, []byte("spec: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	aws.mustRun("s3", "mb", "s3://kubeup-state")
	aws.mustRun("s3", "cp", local, "s3://kubeup-state/clusters/demo/config")
	aws.mustRun("s3", "cp", local, "s3://kubeup-state/clusters/other/config")
	ls := string(aws.mustRun("s3", "ls", "--recursive", "s3://kubeup-state/clusters/demo/"))
	if !strings.Contains(ls, "clusters/demo/config") || strings.Contains(ls, "other") {
		t.Errorf("s3 ls --recursive s3://kubeup-state/clusters/demo/:\n%s", ls)
	}
	aws.mustRun("s3", "cp", "s3://kubeup-state/clusters/demo/config", filepath.Join(aws.dir, "back"))
	if b, err := os.ReadFile(filepath.Join(aws.dir, "back")); err != nil || string(b) != "spec: {}\n" {
		t.Errorf("the object copied back: %q, %v", b, err)
	}

}
