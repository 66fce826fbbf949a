package gcetasks

import (
	"errors"
	"maps"
	"regexp"
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
)

// accountGraph is a graph that checks the service account email, as the model adds it.
func accountGraph(email string, sa **ServiceAccount) func() *engine.Graph[*Cloud] {
	return func() *engine.Graph[*Cloud] {
		g := engine.NewGraph[*Cloud]()
		*sa = engine.Add(g, &ServiceAccount{Email: email}, engine.WithLifecycle(engine.ExistsAndValidates))
		return g
	}
}

func TestDefaultServiceAccountExists(t *testing.T) {
	c, srv := newTestCloud(t)
	var sa *ServiceAccount
	for _, target := range []engine.Target{engine.DryRun, engine.Apply} {
		srv.ResetCalls()
		if p := mustRun(t, c, target, accountGraph(DefaultServiceAccount, &sa)); len(p.Changes) != 0 {
			t.Errorf("%s: changes %v, want none", target, p.Changes)
		}
		if sa.AccountEmail == nil || !regexp.MustCompile(`^[0-9]+-compute@developer\.gserviceaccount\.com$`).MatchString(*sa.AccountEmail) {
			t.Errorf("%s: AccountEmail = %v, want the project's Compute Engine default service account", target, sa.AccountEmail)
		}
		if got, want := srv.Calls(), map[string]int{"compute.projects.get": 1}; !maps.Equal(got, want) {
			t.Errorf("%s: calls %v, want %v", target, got, want)
		}
	}
}

func TestServiceAccountEmailExists(t *testing.T) {
	c, srv := newTestCloud(t)
	const email = "nodes@p.iam.gserviceaccount.com"
	srv.AddServiceAccount(testProject, email)
	var sa *ServiceAccount
	mustRun(t, c, engine.Apply, accountGraph(email, &sa))
	if sa.AccountEmail == nil || *sa.AccountEmail != email {
		t.Errorf("AccountEmail = %v, want %s", sa.AccountEmail, email)
	}
	if got, want := srv.Calls(), map[string]int{"iam.projects.serviceAccounts.get": 1}; !maps.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
}

func TestMissingServiceAccountIsAClearErrorAndNothingIsMade(t *testing.T) {
	c, srv := newTestCloud(t)
	srv.AddServiceAccount("other", "nodes@other.iam.gserviceaccount.com")
	for _, email := range []string{"nodes@p.iam.gserviceaccount.com", "etcd@p.iam.gserviceaccount.com"} {
		for _, target := range []engine.Target{engine.DryRun, engine.Apply} {
			var sa *ServiceAccount
			_, err := runOnce(c, target, accountGraph(email, &sa))
			if err == nil {
				t.Fatalf("%s %s: no error for a missing service account", email, target)
			}
			if !errors.Is(err, engine.ErrNotFound) {
				t.Errorf("%s %s: %v does not wrap engine.ErrNotFound", email, target, err)
			}
			for _, want := range []string{email, "spec.gce.serviceAccount", "gcloud iam service-accounts create"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s %s: error %q does not say %q", email, target, err, want)
				}
			}
		}
	}
	if m := mutatingCalls(srv.Calls()); len(m) != 0 {
		t.Errorf("mutating calls %v, want none", m)
	}
}
