package fakeaws

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// IAM speaks Query (service "iam", global: any region): roles and instance profiles, enough to make "an instance
// profile" as the AWS CLI does (create-role, create-instance-profile, add-role-to-instance-profile) and for
// kubeup to find it (GetInstanceProfile).

// AccountID is the account of everything the fake holds (ARNs, the instance identity document).
const AccountID = "123456789012"

type iamState struct {
	profiles map[string]*instanceProfile // by name
	roles    map[string]*iamRole         // by name
}

type instanceProfile struct {
	name, path, id string
	created        time.Time
	roles          []string // at most one, as in AWS
}

type iamRole struct {
	name, path, id, policy, description string
	created                             time.Time
}

func (s *Server) initIAM() {
	s.iam = iamState{profiles: map[string]*instanceProfile{}, roles: map[string]*iamRole{}}
}

// The documents of the answers.

type iamRoleDoc struct {
	Path                     string `xml:"Path"`
	RoleName                 string `xml:"RoleName"`
	RoleID                   string `xml:"RoleId"`
	Arn                      string `xml:"Arn"`
	CreateDate               string `xml:"CreateDate"`
	AssumeRolePolicyDocument string `xml:"AssumeRolePolicyDocument,omitempty"`
	Description              string `xml:"Description,omitempty"`
	MaxSessionDuration       int    `xml:"MaxSessionDuration"`
}

type iamProfileDoc struct {
	Path                string `xml:"Path"`
	InstanceProfileName string `xml:"InstanceProfileName"`
	InstanceProfileID   string `xml:"InstanceProfileId"`
	Arn                 string `xml:"Arn"`
	CreateDate          string `xml:"CreateDate"`
	Roles               struct {
		Members []iamRoleDoc `xml:"member"`
	} `xml:"Roles"`
}

func (r *iamRole) document() iamRoleDoc {
	return iamRoleDoc{Path: r.path, RoleName: r.name, RoleID: r.id, Arn: "arn:aws:iam::" + AccountID + ":role" + r.path + r.name,
		CreateDate: r.created.Format(time.RFC3339), AssumeRolePolicyDocument: url.PathEscape(r.policy), Description: r.description,
		MaxSessionDuration: 3600}
}

func (s *Server) profileDocument(p *instanceProfile) iamProfileDoc {
	d := iamProfileDoc{Path: p.path, InstanceProfileName: p.name, InstanceProfileID: p.id,
		Arn: "arn:aws:iam::" + AccountID + ":instance-profile" + p.path + p.name, CreateDate: p.created.Format(time.RFC3339)}
	for _, name := range p.roles {
		if r, ok := s.iam.roles[name]; ok {
			d.Roles.Members = append(d.Roles.Members, r.document())
		}
	}
	return d
}

// iamAction runs one IAM Query action with s.mu held.
func (s *Server) iamAction(action string, form url.Values) (any, error) {
	switch action {
	case "CreateInstanceProfile":
		return s.createInstanceProfile(form)
	case "GetInstanceProfile":
		p, err := s.instanceProfile(form.Get("InstanceProfileName"))
		if err != nil {
			return nil, err
		}
		return struct {
			InstanceProfile iamProfileDoc `xml:"InstanceProfile"`
		}{s.profileDocument(p)}, nil
	case "ListInstanceProfiles":
		return s.listInstanceProfiles(form)
	case "DeleteInstanceProfile":
		p, err := s.instanceProfile(form.Get("InstanceProfileName"))
		if err != nil {
			return nil, err
		}
		if len(p.roles) > 0 {
			return nil, &Error{Status: http.StatusConflict, Code: "DeleteConflict", Message: "Cannot delete entity, must remove roles from instance profile first."}
		}
		delete(s.iam.profiles, p.name)
		return nil, nil
	case "CreateRole":
		return s.createRole(form)
	case "GetRole":
		r, err := s.role(form.Get("RoleName"))
		if err != nil {
			return nil, err
		}
		return struct {
			Role iamRoleDoc `xml:"Role"`
		}{r.document()}, nil
	case "DeleteRole":
		r, err := s.role(form.Get("RoleName"))
		if err != nil {
			return nil, err
		}
		for _, p := range s.iam.profiles {
			if slices.Contains(p.roles, r.name) {
				return nil, &Error{Status: http.StatusConflict, Code: "DeleteConflict", Message: "Cannot delete entity, must remove roles from instance profile first."}
			}
		}
		delete(s.iam.roles, r.name)
		return nil, nil
	case "AddRoleToInstanceProfile", "RemoveRoleFromInstanceProfile":
		p, err := s.instanceProfile(form.Get("InstanceProfileName"))
		if err != nil {
			return nil, err
		}
		r, err := s.role(form.Get("RoleName"))
		if err != nil {
			return nil, err
		}
		if action == "RemoveRoleFromInstanceProfile" {
			if !slices.Contains(p.roles, r.name) {
				return nil, iamNoSuchEntity("The role with name %s is not in instance profile %s.", r.name, p.name)
			}
			p.roles = slices.DeleteFunc(p.roles, func(n string) bool { return n == r.name })
			return nil, nil
		}
		if len(p.roles) > 0 {
			return nil, &Error{Status: http.StatusConflict, Code: "LimitExceeded", Message: "Cannot exceed quota for InstanceSessionsPerInstanceProfile: 1"}
		}
		p.roles = append(p.roles, r.name)
		return nil, nil
	}
	return nil, errorf("InvalidAction", "fakeaws: IAM has no action %s", action)
}

func iamNoSuchEntity(format string, args ...any) *Error {
	return &Error{Status: http.StatusNotFound, Code: "NoSuchEntity", Message: fmt.Sprintf(format, args...)}
}

// iamNameAndPath reads and checks a name (1 to 128 of [\w+=,.@-]) and a path ("/" by default, "/.../").
func iamNameAndPath(form url.Values, nameParam string) (name, path string, err error) {
	name, path = form.Get(nameParam), form.Get("Path")
	if path == "" {
		path = "/"
	}
	ok := len(name) >= 1 && len(name) <= 128 && strings.IndexFunc(name, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_+=,.@-", c))
	}) < 0
	if !ok {
		return "", "", errorf("ValidationError", "1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\w+=,.@-]+", name, nameParam)
	}
	if !strings.HasPrefix(path, "/") || !strings.HasSuffix(path, "/") {
		return "", "", errorf("ValidationError", "The specified value for path is invalid. It must begin and end with / and contain only alphanumeric characters and/or / characters.")
	}
	return name, path, nil
}

func (s *Server) instanceProfile(name string) (*instanceProfile, error) {
	if p, ok := s.iam.profiles[name]; ok {
		return p, nil
	}
	return nil, iamNoSuchEntity("Instance Profile %s cannot be found.", name)
}

func (s *Server) role(name string) (*iamRole, error) {
	if r, ok := s.iam.roles[name]; ok {
		return r, nil
	}
	return nil, iamNoSuchEntity("The role with name %s cannot be found.", name)
}

func (s *Server) createInstanceProfile(form url.Values) (any, error) {
	name, path, err := iamNameAndPath(form, "InstanceProfileName")
	if err != nil {
		return nil, err
	}
	if _, ok := s.iam.profiles[name]; ok {
		return nil, &Error{Status: http.StatusConflict, Code: "EntityAlreadyExists", Message: fmt.Sprintf("Instance Profile %s already exists.", name)}
	}
	s.nextID++
	p := &instanceProfile{name: name, path: path, id: fmt.Sprintf("AIPA%017X", s.nextID), created: time.Now().UTC().Truncate(time.Second)}
	s.iam.profiles[name] = p
	return struct {
		InstanceProfile iamProfileDoc `xml:"InstanceProfile"`
	}{s.profileDocument(p)}, nil
}

func (s *Server) createRole(form url.Values) (any, error) {
	name, path, err := iamNameAndPath(form, "RoleName")
	if err != nil {
		return nil, err
	}
	policy := form.Get("AssumeRolePolicyDocument")
	if policy == "" {
		return nil, errorf("ValidationError", "1 validation error detected: Value null at 'assumeRolePolicyDocument' failed to satisfy constraint: Member must not be null")
	}
	if _, ok := s.iam.roles[name]; ok {
		return nil, &Error{Status: http.StatusConflict, Code: "EntityAlreadyExists", Message: fmt.Sprintf("Role with name %s already exists.", name)}
	}
	s.nextID++
	r := &iamRole{name: name, path: path, id: fmt.Sprintf("AROA%017X", s.nextID), policy: policy,
		description: form.Get("Description"), created: time.Now().UTC().Truncate(time.Second)}
	s.iam.roles[name] = r
	return struct {
		Role iamRoleDoc `xml:"Role"`
	}{r.document()}, nil
}

// listInstanceProfiles lists by name, PathPrefix filtering, Marker (the next name) and MaxItems paging.
func (s *Server) listInstanceProfiles(form url.Values) (any, error) {
	limit := 100
	if v := form.Get("MaxItems"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return nil, errorf("ValidationError", "1 validation error detected: Value '%s' at 'maxItems' failed to satisfy constraint: Member must have value between 1 and 1000", v)
		}
		limit = n
	}
	prefix, marker := form.Get("PathPrefix"), form.Get("Marker")
	var names []string
	for name, p := range s.iam.profiles {
		if strings.HasPrefix(p.path, prefix) && name >= marker {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	answer := struct {
		InstanceProfiles struct {
			Members []iamProfileDoc `xml:"member"`
		} `xml:"InstanceProfiles"`
		IsTruncated bool   `xml:"IsTruncated"`
		Marker      string `xml:"Marker,omitempty"`
	}{}
	if len(names) > limit {
		answer.IsTruncated, answer.Marker = true, names[limit]
		names = names[:limit]
	}
	for _, name := range names {
		answer.InstanceProfiles.Members = append(answer.InstanceProfiles.Members, s.profileDocument(s.iam.profiles[name]))
	}
	return answer, nil
}
