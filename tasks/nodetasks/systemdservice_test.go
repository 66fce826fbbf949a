package nodetasks

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/internal/golden"
)

const kubeletUnit = `[Unit]
Description=kubelet

[Service]
ExecStart=/usr/local/bin/kubelet --config=/var/lib/kubelet/config.yaml
Restart=always

[Install]
WantedBy=multi-user.target
`

// kubeletGraph is a service that depends on a file, an asset and a manifest, without systemd.
func kubeletGraph(config string) func() *engine.Graph[*Node] {
	return func() *engine.Graph[*Node] {
		g := engine.NewGraph[*Node]()
		conf := engine.Add(g, &File{Path: "/var/lib/kubelet/config.yaml", Contents: ptr(config)})
		bin := engine.Add(g, &Asset{Path: "/usr/local/bin/kubelet", URL: "http://unused.invalid/kubelet", SHA256: sha(kubeletBinary)})
		man := engine.Add(g, &ManifestFile{Path: "/etc/kubernetes/manifests/etcd.manifest", Pod: etcdPod()})
		engine.Add(g, &SystemdService{Name: "kubelet.service", Definition: ptr(kubeletUnit),
			DropIns: map[string]string{"10-kubeup.conf": "[Service]\nEnvironment=A=1\n"},
			Enabled: ptr(true), Running: ptr(true), DependsOn: []engine.Task{conf, bin, man}})
		engine.Add(g, &SystemdService{Name: "static.service", Definition: ptr("[Service]\nExecStart=/bin/true\n"), Enabled: ptr(true)})
		return g
	}
}

// Without systemd, the unit files, the wants/ link and the record of inputs converge; a changed dependency shows
// as one changed input line.
func TestSystemdServiceUnitFilesOnly(t *testing.T) {
	ctx := context.Background()
	n := testNode(t, map[string]string{"/usr/local/bin/kubelet": kubeletBinary}) // the asset is there: no download
	enginetest.ApplyThenNoChanges(t, ctx, n, kubeletGraph("a: 1\n"))

	link, err := os.Readlink(filepath.Join(n.Root, "etc/systemd/system/multi-user.target.wants/kubelet.service"))
	if err != nil || link != "/etc/systemd/system/kubelet.service" {
		t.Errorf("wants link: %q, %v", link, err)
	}
	for _, p := range []string{"etc/systemd/system/kubelet.service", "etc/systemd/system/kubelet.service.d/10-kubeup.conf",
		"var/lib/kubeup/systemd/kubelet.service.inputs"} {
		if _, err := os.Stat(filepath.Join(n.Root, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}

	res, err := engine.Run(ctx, kubeletGraph("a: 2\n")(), n, engine.Options{Target: engine.DryRun})
	if err != nil {
		t.Fatal(err)
	}
	var report bytes.Buffer
	res.Plan.WriteText(&report)
	golden.Assert(t, "testdata/service-dependency-changed.golden", report.Bytes())

	// Disabled: the link goes.
	g := engine.NewGraph[*Node]()
	engine.Add(g, &SystemdService{Name: "kubelet.service", Definition: ptr(kubeletUnit), Enabled: ptr(false)})
	if _, err := engine.Run(ctx, g, n, engine.Options{Target: engine.Apply}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(n.Root, "etc/systemd/system/multi-user.target.wants/kubelet.service")); !os.IsNotExist(err) {
		t.Errorf("after disabling, the wants link: %v", err)
	}
}

func TestSystemdServiceCreateReport(t *testing.T) {
	n := testNode(t, map[string]string{"/usr/local/bin/kubelet": kubeletBinary})
	res, err := engine.Run(context.Background(), kubeletGraph("a: 1\n")(), n, engine.Options{Target: engine.DryRun})
	if err != nil {
		t.Fatal(err)
	}
	var report bytes.Buffer
	res.Plan.WriteText(&report)
	golden.Assert(t, "testdata/service-create.golden", report.Bytes())
}

func TestWantsLinks(t *testing.T) {
	got := wantsLinks("a.service", "[Unit]\nWantedBy=ignored.target\n[Install]\nWantedBy=multi-user.target graphical.target\nRequiredBy=b.service\nAlias=x.service\n")
	want := "/etc/systemd/system/multi-user.target.wants/a.service /etc/systemd/system/graphical.target.wants/a.service " +
		"/etc/systemd/system/b.service.requires/a.service"
	if strings.Join(got, " ") != want {
		t.Errorf("wantsLinks = %v, want %s", got, want)
	}
}

func TestSystemdServiceCheckChanges(t *testing.T) {
	tests := []struct {
		svc     *SystemdService
		wantErr string
	}{
		{svc: &SystemdService{Name: "kubelet.service"}},
		{svc: &SystemdService{Name: "kubelet"}, wantErr: `field Name: "kubelet" is not a unit name`},
		{svc: &SystemdService{Name: "../x.service"}, wantErr: "is not a unit name"},
		{svc: &SystemdService{Name: "k.service", DropIns: map[string]string{"10.txt": ""}}, wantErr: `field DropIns: "10.txt"`},
	}
	for _, tt := range tests {
		err := tt.svc.CheckChanges(nil, tt.svc, tt.svc)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("CheckChanges(%s): %v", tt.svc.Name, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("CheckChanges(%s) error = %v, want one containing %q", tt.svc.Name, err, tt.wantErr)
		}
	}
}

func TestSystemdServiceDeps(t *testing.T) {
	enginetest.CheckDeps(t, &SystemdService{Name: "k.service", DependsOn: []engine.Task{&File{Path: "/a"}, &Asset{Path: "/b"}}})
}
