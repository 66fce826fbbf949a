package fakegce

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	compute "google.golang.org/api/compute/v1"
)

// The metadata server, under /computeMetadata/v1/, for one instance: instance/{id,name,hostname,zone,
// machine-type,tags}, instance/network-interfaces/0/{ip,network}, instance/network-interfaces/0/access-configs/0/
// external-ip, instance/attributes/ and instance/attributes/KEY (the instance's metadata), project/{project-id,
// numeric-project-id}. Requests must carry Metadata-Flavor: Google (403 otherwise), as on GCE. The main address
// answers for the chosen instance (ChooseMetadataInstance, POST /__fake/metadata-instance?name=), or the newest
// one; MetadataHandler answers for one given instance. Metadata calls are neither counted nor subject to the fault
// injection: they are not API calls.

// MetadataHandler answers the metadata server for the instance of that name alone, whatever is chosen on the main
// address: serve it on a test server of its own to give each of several fake instances its metadata server. The
// instance need not exist yet: until it does, requests answer 404.
func (s *Server) MetadataHandler(instanceName string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if instanceName == "" {
			http.Error(w, "fakegce: MetadataHandler needs an instance name", http.StatusInternalServerError)
			return
		}
		s.serveMetadata(w, r, instanceName)
	})
}

// ChooseMetadataInstance makes the main address's metadata server answer for the instance of that name; "" goes
// back to the newest instance. An instance that does not exist is an error.
func (s *Server) ChooseMetadataInstance(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if name != "" {
		if _, _, ok := s.findInstance(name); !ok {
			return fmt.Errorf("fakegce: metadata: no instance %s", name)
		}
	}
	s.metadataInstance = name
	return nil
}

// findInstance finds an instance by name in any project. Call it with s.mu held.
func (s *Server) findInstance(name string) (*project, *compute.Instance, bool) {
	projects := make([]string, 0, len(s.projects))
	for n := range s.projects {
		projects = append(projects, n)
	}
	sort.Strings(projects)
	for _, pn := range projects {
		p := s.projects[pn]
		for _, in := range p.instances {
			if in.Name == name {
				return p, in, true
			}
		}
	}
	return nil, nil, false
}

func (s *Server) serveMetadata(w http.ResponseWriter, r *http.Request, name string) {
	w.Header().Set("Metadata-Flavor", "Google")
	if r.URL.Path == "/" || r.URL.Path == "" {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("computeMetadata/\n"))
		return
	}
	if r.Header.Get("Metadata-Flavor") != "Google" {
		http.Error(w, "Missing Metadata-Flavor:Google header.", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "fakegce: metadata is read with GET", http.StatusMethodNotAllowed)
		return
	}
	path, ok := strings.CutPrefix(r.URL.Path, "/computeMetadata/v1/")
	if !ok {
		http.Error(w, "fakegce: the metadata server serves /computeMetadata/v1/", http.StatusNotFound)
		return
	}
	s.mu.Lock()
	body, found := s.metadataAnswer(name, path)
	s.mu.Unlock()
	if !found {
		http.Error(w, "Not Found", http.StatusNotFound)
		return
	}
	if strings.HasPrefix(body, "[") {
		w.Header().Set("Content-Type", "application/json")
	} else {
		w.Header().Set("Content-Type", "application/text")
	}
	w.Write([]byte(body))
}

// metadataAnswer is the metadata of path for the instance of that name ("": the chosen one, or the newest).
// Call it with s.mu held.
func (s *Server) metadataAnswer(name, path string) (string, bool) {
	if name == "" {
		name = s.metadataInstance
	}
	if name == "" && len(s.instanceOrder) > 0 {
		name = lastElem(s.instanceOrder[len(s.instanceOrder)-1])
	}
	p, in, ok := s.findInstance(name)
	if !ok {
		return "", false
	}
	zone := lastElem(in.Zone)
	nic := func(i int) *compute.NetworkInterface {
		if i < len(in.NetworkInterfaces) {
			return in.NetworkInterfaces[i]
		}
		return nil
	}
	switch path {
	case "project/project-id":
		return p.name, true
	case "project/numeric-project-id":
		return strconv.FormatUint(p.number, 10), true
	case "instance/id":
		return strconv.FormatUint(in.Id, 10), true
	case "instance/name":
		return in.Name, true
	case "instance/hostname":
		return fmt.Sprintf("%s.%s.c.%s.internal", in.Name, zone, p.name), true
	case "instance/zone":
		return fmt.Sprintf("projects/%d/zones/%s", p.number, zone), true
	case "instance/machine-type":
		return fmt.Sprintf("projects/%d/machineTypes/%s", p.number, lastElem(in.MachineType)), true
	case "instance/tags":
		var tags []string
		if in.Tags != nil {
			tags = in.Tags.Items
		}
		b, _ := json.Marshal(append([]string{}, tags...))
		return string(b), true
	case "instance/network-interfaces/0/ip":
		if n := nic(0); n != nil {
			return n.NetworkIP, true
		}
	case "instance/network-interfaces/0/network":
		if n := nic(0); n != nil {
			return fmt.Sprintf("projects/%d/networks/%s", p.number, lastElem(n.Network)), true
		}
	case "instance/network-interfaces/0/access-configs/0/external-ip":
		if n := nic(0); n != nil && len(n.AccessConfigs) > 0 {
			return n.AccessConfigs[0].NatIP, true
		}
	case "instance/attributes/":
		var keys []string
		if in.Metadata != nil {
			for _, it := range in.Metadata.Items {
				keys = append(keys, it.Key)
			}
		}
		sort.Strings(keys)
		if len(keys) == 0 {
			return "", true
		}
		return strings.Join(keys, "\n") + "\n", true
	}
	if k, ok := strings.CutPrefix(path, "instance/attributes/"); ok && in.Metadata != nil {
		for _, it := range in.Metadata.Items {
			if it.Key == k && it.Value != nil {
				return *it.Value, true
			}
		}
	}
	return "", false
}
