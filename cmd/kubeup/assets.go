package main

import (
	"github.com/spf13/cobra"

	"kubeup.dev/kubeup/cloudup"
)

func newAssetsCommand(g *globals) *cobra.Command {
	assets := &cobra.Command{
		Use:   "assets",
		Short: "Manage the files nodes install (spec.assets)",
	}
	var name clusterName
	var o cloudup.MirrorOptions
	cmd := &cobra.Command{
		Use:   "mirror NAME [--from DIR ...] [--yes]",
		Short: "Copy every asset of a cluster into the state store and record its URL and sha256 in the spec",
		Long: `Copy every file a node of the cluster installs (spec.assets of the complete spec: kubelet, containerd's,
the CNI plugins' and crictl's archives, runc, protokube, and the image archives nodes preload) into the state
store, at <cluster>/assets/<relative path>, and record that URL and the file's sha256 in the cluster's spec. No
node installs an asset without a sha256: this is how a cluster gets them.

Each asset is taken from the first --from directory that holds a file of its base name (kubelet,
containerd-2.4.2-linux-amd64.tar.gz, runc.amd64, cni-plugins-linux-amd64-v1.10.0.tgz,
crictl-v1.37.0-linux-amd64.tar.gz, protokube, pause.tar, kube-proxy.tar, coredns.tar, flannel.tar
(spec.networking.podNetwork flannel), etcd.tar, kube-apiserver.tar, kube-controller-manager.tar,
kube-scheduler.tar), else downloaded from its URL. The
archives must have upstream's layout: containerd's with bin/containerd, bin/containerd-shim-runc-v2 and
bin/ctr, the CNI plugins' and crictl's flat. An asset already in the store with the sha256 the spec records is not read again.

When a file has another sha256 than the spec records for its asset, nothing is copied or recorded: the error
names the asset and both hashes. An asset that can be read from nowhere is reported; the others are mirrored,
and the command exits 1.

Without --yes, only prints what it would copy and record. A second run changes nothing. Run it again after a
change of kubernetesVersion: the recorded URLs name the version they were mirrored for. The nodes read the
mirror at their next nodeup run, once "kubeup update cluster --yes" has written their configuration.`,
		Example: `  kubeup assets mirror demo.example.com --from /var/cache/kubeup/bin/v1.34.2 --from ./runtime-archives
  kubeup assets mirror demo.example.com --from /var/cache/kubeup/bin/v1.34.2 --from ./runtime-archives --yes`,
		Args: name.args,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			n, err := name.required(cmd, args)
			if err != nil {
				return err
			}
			cs, err := g.clusters(ctx)
			if err != nil {
				return err
			}
			o.Out = cmd.OutOrStdout()
			return cs.MirrorAssets(ctx, n, o)
		},
	}
	name.addFlag(cmd, g)
	cmd.Flags().StringArrayVar(&o.From, "from", nil, "a directory holding asset files by their base names (repeatable; searched in order)")
	cmd.Flags().BoolVarP(&o.Apply, "yes", "y", false, "copy and record (without it, only show what would change)")
	assets.AddCommand(cmd)
	return assets
}
