package gcetasks

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"kubeup.dev/kubeup/engine"
)

// DefaultServiceAccount is what names the project's Compute Engine default service account
// (<project number>-compute@developer.gserviceaccount.com) where an email would go: spec.gce.serviceAccount,
// ServiceAccount.Email, InstanceTemplate.ServiceAccount.
const DefaultServiceAccount = "default"

// ServiceAccount is the user's service account the machines run as (spec.gce.serviceAccount). kubeup checks that
// it exists and never creates, changes or grants it anything (Find never returns nil and Render never changes
// the world), and the instance templates depend on it. Its key is "ServiceAccount/<Email>".
//
// Find reads DefaultServiceAccount's email from compute's projects.get (defaultServiceAccount), and any other
// account with IAM's projects.serviceAccounts.get ("projects/-/serviceAccounts/<email>"), once per account and
// run. A missing account is Find's terminal error (wrapping engine.ErrNotFound), which names
// spec.gce.serviceAccount and how to make the account. An account the caller may not read is an error wrapping
// engine.ErrAccessDenied that says what could not be checked: the model adds the task with the lifecycle
// engine.WarnIfInsufficientAccess, which turns it into a warning (an operator without iam.serviceAccounts.get
// can still update the cluster).
type ServiceAccount struct {
	// Email is the account's email ("nodes@my-project.iam.gserviceaccount.com") or DefaultServiceAccount.
	Email string
	// AccountEmail is the account's email as Google names it: Email's, or the default account's (output).
	AccountEmail *string `kubeup:"output"`
}

var (
	_ engine.Resource[*ServiceAccount, *Cloud] = (*ServiceAccount)(nil)
	_ engine.Renderer[*ServiceAccount, *Cloud] = (*ServiceAccount)(nil)
	_ engine.Classed                           = (*ServiceAccount)(nil)
)

func (a *ServiceAccount) Key() engine.Key     { return engine.Key{Type: "ServiceAccount", Name: a.Email} }
func (a *ServiceAccount) Deps() []engine.Task { return nil }
func (a *ServiceAccount) APIClass() string {
	if a.Email == DefaultServiceAccount {
		return "compute"
	}
	return "iam"
}

// Find reads the account; a missing one is a terminal error (see ServiceAccount). It never changes anything.
func (a *ServiceAccount) Find(ctx context.Context, c *Cloud) (*ServiceAccount, error) {
	email, err := c.reads.accounts.Of(a.Email).Get(ctx, func(ctx context.Context) (string, error) {
		if a.Email == DefaultServiceAccount {
			p, err := c.Compute.Projects.Get(c.Project).Context(ctx).Do()
			if err != nil {
				return "", Classify(fmt.Sprintf("reading project %s (for its Compute Engine default service account, spec.gce.serviceAccount %q)",
					c.Project, DefaultServiceAccount), err)
			}
			return p.DefaultServiceAccount, nil
		}
		if c.IAM == nil {
			return "", engine.Terminal(errors.New("gcetasks: the Cloud has no IAM service to read service account " + a.Email + " with"))
		}
		sa, err := c.IAM.Projects.ServiceAccounts.Get("projects/-/serviceAccounts/" + a.Email).Context(ctx).Do()
		switch {
		case IsNotFound(err):
			return "", nil
		case httpCode(err) == http.StatusForbidden:
			// Google answers 403 for an account that does not exist as well as for one the caller may not read.
			return "", Classify(fmt.Sprintf("service account %s (spec.gce.serviceAccount) could not be checked: you may not read it "+
				"(iam.serviceAccounts.get, in roles/iam.serviceAccountUser on the account), or it does not exist; the instance "+
				"templates name it unchecked, and GCE refuses to make their instances if it does not exist", a.Email), err)
		case err != nil:
			return "", Classify(fmt.Sprintf("reading service account %s (spec.gce.serviceAccount)", a.Email), err)
		}
		return sa.Email, nil
	})
	if err != nil {
		return nil, err
	}
	if email == "" {
		return nil, a.missing(c)
	}
	return &ServiceAccount{Email: a.Email, AccountEmail: &email}, nil
}

// missing is the error of an account that does not exist.
func (a *ServiceAccount) missing(c *Cloud) error {
	if a.Email == DefaultServiceAccount {
		return engine.Terminal(fmt.Errorf("project %s has no Compute Engine default service account (spec.gce.serviceAccount is %q): "+
			"enable the Compute Engine API in the project, or create a service account (gcloud iam service-accounts create NAME "+
			"--project %s) and name its email (NAME@%s.iam.gserviceaccount.com) in spec.gce.serviceAccount: %w",
			c.Project, DefaultServiceAccount, c.Project, c.Project, engine.ErrNotFound))
	}
	return engine.Terminal(fmt.Errorf("service account %s (spec.gce.serviceAccount) does not exist: kubeup never creates one; "+
		"create it (gcloud iam service-accounts create NAME --project PROJECT makes NAME@PROJECT.iam.gserviceaccount.com) "+
		"and grant it the roles docs/gce.md lists, or name another in spec.gce.serviceAccount (%q: the project's Compute "+
		"Engine default service account): %w", a.Email, DefaultServiceAccount, engine.ErrNotFound))
}

// CheckChanges has nothing to refuse: kubeup changes nothing of an account.
func (a *ServiceAccount) CheckChanges(actual, expected, changes *ServiceAccount) error { return nil }

// Render never changes the world: the account is the user's. It is only reached when the task is not added with
// the lifecycle ExistsAndValidates.
func (a *ServiceAccount) Render(ctx context.Context, c *Cloud, actual, expected, changes *ServiceAccount) error {
	if actual == nil {
		return expected.missing(c)
	}
	return nil
}
