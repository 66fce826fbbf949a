package fakegce

import (
	"context"
	"net/http"
	"testing"

	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"
	iam "google.golang.org/api/iam/v1"
	"google.golang.org/api/option"
)

// TestServiceAccounts: the Compute Engine default service account that projects.get names exists; an account
// exists once AddServiceAccount made it, in its own project and under "-" only.
func TestServiceAccounts(t *testing.T) {
	fake, svc, _, url := newClients(t)
	is, err := iam.NewService(context.Background(), option.WithEndpoint(url+"/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	get := func(project, email string) (*iam.ServiceAccount, error) {
		return is.Projects.ServiceAccounts.Get("projects/" + project + "/serviceAccounts/" + email).Do()
	}
	p := must[*compute.Project](t)(svc.Projects.Get("p").Do())
	if p.DefaultServiceAccount == "" {
		t.Fatal("projects.get names no defaultServiceAccount")
	}
	for _, proj := range []string{"-", "p"} {
		if sa, err := get(proj, p.DefaultServiceAccount); err != nil || sa.Email != p.DefaultServiceAccount || sa.ProjectId != "p" {
			t.Errorf("the default account under %s: %+v, %v", proj, sa, err)
		}
	}
	const email = "nodes@p.iam.gserviceaccount.com"
	notFound := func(project, email string) {
		t.Helper()
		_, err := get(project, email)
		if ge, ok := err.(*googleapi.Error); !ok || ge.Code != http.StatusNotFound {
			t.Errorf("%s under %s: %v, want a 404", email, project, err)
		}
	}
	notFound("-", email)
	notFound("q", p.DefaultServiceAccount)
	fake.AddServiceAccount("p", email)
	if sa, err := get("-", email); err != nil || sa.Email != email || sa.Name != "projects/p/serviceAccounts/"+email {
		t.Errorf("%s: %+v, %v", email, sa, err)
	}
	notFound("q", email)
	if got := fake.Calls()["iam.projects.serviceAccounts.get"]; got != 6 {
		t.Errorf("%d iam.projects.serviceAccounts.get calls counted, want 6", got)
	}
}
