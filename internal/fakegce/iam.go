package fakegce

import (
	"net/http"
	"regexp"
	"strconv"

	iam "google.golang.org/api/iam/v1"
)

// IAM serves what kubeup reads of Identity and Access Management: projects.serviceAccounts.get, at
// /v1/projects/{project}/serviceAccounts/{email} (iam/v1's basePath is the host's root, https://iam.googleapis.com/,
// and its paths start with "v1/": a client given option.WithEndpoint(ADDRESS) asks for /v1/...). The project may
// be "-" (any project), as Google allows when the email names the account.
//
// Service accounts exist when AddServiceAccount made them; the Compute Engine default service account of every
// project (<project number>-compute@developer.gserviceaccount.com, as compute's projects.get names it) always
// exists, as every project does.

// defaultAccount matches the Compute Engine default service account's email; its group is the project number.
var defaultAccount = regexp.MustCompile(`^([0-9]+)-compute@developer\.gserviceaccount\.com$`)

// AddServiceAccount makes the service account email in project (what `gcloud iam service-accounts create` does).
func (s *Server) AddServiceAccount(project, email string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.serviceAccounts == nil {
		s.serviceAccounts = map[string]string{}
	}
	s.serviceAccounts[email] = project
}

// getServiceAccount answers projects.serviceAccounts.get. Call it with s.mu held.
func getServiceAccount(c *call) (any, error) {
	email := c.names[0]
	owner, ok := "", false
	if m := defaultAccount.FindStringSubmatch(email); m != nil {
		ok = true
		owner = m[1]
		for name, p := range c.s.projects {
			if strconv.FormatUint(p.number, 10) == m[1] && name != "-" {
				owner = name
			}
		}
		if c.p.name != "-" && strconv.FormatUint(c.p.number, 10) != m[1] {
			ok = false
		}
	} else {
		owner, ok = c.s.serviceAccounts[email]
		if ok && c.p.name != "-" && c.p.name != owner {
			ok = false
		}
	}
	if !ok {
		return nil, errorf(http.StatusNotFound, "notFound", "Unknown service account")
	}
	return &iam.ServiceAccount{Name: "projects/" + owner + "/serviceAccounts/" + email, ProjectId: owner, Email: email,
		UniqueId: strconv.FormatUint(zoneID(email)*1_000_000_007, 10), Etag: "MDEwMjE5MjA="}, nil
}

// iamRoutes are the IAM methods served, by path after v1/projects/{project}/.
var iamRoutes = []route{
	{"GET", []string{"serviceAccounts", "*"}, "iam.projects.serviceAccounts.get", getServiceAccount},
}
