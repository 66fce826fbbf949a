package main

// The clouds this kubeup has: each provider's package registers its operator side with cloudup in its init
// (cloudup.RegisterProvider); local's is built into cloudup. A new provider is one more line here.
import (
	_ "kubeup.dev/kubeup/providers/aws"
	_ "kubeup.dev/kubeup/providers/gce"
)
