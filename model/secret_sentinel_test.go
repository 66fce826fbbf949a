package model

import (
	"strings"
	"testing"
)

// TestValidateNeverPrintsATSIGSecretThatLooksLikeAPath: a TSIG secret is base64, whose alphabet holds '/': one
// in 64 starts with it, and so passes for an absolute path until its '=' padding or a "//" is found, and the
// problem quoted it whole. It is a problem without the value.
func TestValidateNeverPrintsATSIGSecretThatLooksLikeAPath(t *testing.T) {
	for _, secret := range []string{"/2VjcmV0LXRzaWcta2V5LWZvci1rdWJldXAtdGVzdHM=", "/2VjcmV0//dGVzdHM+a2V5AB"} {
		c, igs := userSpec(t, CloudLocal, 1)
		c.Spec.Local = &LocalSpec{DNS: &LocalDNSSpec{Provider: "rfc2136", Server: "127.0.0.1:53", TSIGKeyName: "k", TSIGSecretFile: secret}}
		c, igs = Complete(c, igs)
		ps := problemsOf(t, Validate("cluster.yaml", c, igs))
		if len(ps) != 1 || ps[0].Path != "spec.local.dns.tsigSecretFile" || !strings.Contains(ps[0].Message, "never the secret itself") {
			t.Errorf("tsigSecretFile %q: problems %v, want one of spec.local.dns.tsigSecretFile", secret, ps)
		}
		for _, p := range ps {
			if strings.Contains(p.String(), secret) {
				t.Errorf("the problem repeats the secret: %s", p)
			}
		}
	}
}
