package dnstasks

import (
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	tests := []struct {
		name    string
		wantErr string // "" for none
	}{
		{name: "api.demo.example.com"},
		{name: "_acme-challenge.demo.example.com"},
		{name: "*.apps.demo.example.com"},
		{name: "etcd-a.internal.demo.example.com"},
		{name: "", wantErr: "empty name"},
		{name: "API.demo.example.com", wantErr: `write "api.demo.example.com"`},
		{name: "api.demo.example.com.", wantErr: `write "api.demo.example.com"`},
		{name: "api..example.com", wantErr: "empty label"},
		{name: "-api.example.com", wantErr: "starts or ends with '-'"},
		{name: "a b.example.com", wantErr: `has ' '`},
		{name: "a.*.example.com", wantErr: `has '*'`},
		{name: strings.Repeat("a", 64) + ".example.com", wantErr: "longer than 63 bytes"},
		{name: strings.Repeat("abcdefg.", 32) + "com", wantErr: "longer than 253 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, "ValidateName", ValidateName(tt.name), tt.wantErr)
		})
	}
}

func TestCanonicalValue(t *testing.T) {
	tests := []struct {
		rrtype, value string
		want          string
		wantErr       string
	}{
		{rrtype: "A", value: "10.0.0.1", want: "10.0.0.1"},
		{rrtype: "A", value: "2001:db8::1", wantErr: "not an IPv4 address"},
		{rrtype: "A", value: "::ffff:10.0.0.1", wantErr: "not an IPv4 address"},
		{rrtype: "A", value: "10.0.0", wantErr: "not an IP address"},
		{rrtype: "AAAA", value: "2001:DB8:0::1", want: "2001:db8::1"},
		{rrtype: "AAAA", value: "10.0.0.1", wantErr: "not an IPv6 address"},
		{rrtype: "AAAA", value: "fe80::1%eth0", wantErr: "not an IP address"},
		{rrtype: "CNAME", value: "LB.Example.com.", want: "lb.example.com"},
		{rrtype: "CNAME", value: "not a name", wantErr: "CNAME target"},
		{rrtype: "TXT", value: `heritage="kubeup"`, want: `heritage="kubeup"`},
		{rrtype: "TXT", value: strings.Repeat("x", 4001), wantErr: "longer than 4000"},
		{rrtype: "MX", value: "10 mail.example.com", wantErr: "not a supported record type"},
		{rrtype: "a", value: "10.0.0.1", wantErr: `write "A"`},
	}
	for _, tt := range tests {
		t.Run(tt.rrtype+" "+tt.value[:min(len(tt.value), 20)], func(t *testing.T) {
			got, err := CanonicalValue(tt.rrtype, tt.value)
			checkErr(t, "CanonicalValue", err, tt.wantErr)
			if got != tt.want {
				t.Errorf("CanonicalValue(%q, %q) = %q, want %q", tt.rrtype, tt.value, got, tt.want)
			}
		})
	}
}

func TestRecordSetValidate(t *testing.T) {
	tests := []struct {
		name    string
		rs      RecordSet
		wantErr string
	}{
		{name: "valid", rs: RecordSet{Name: "api.example.com", Type: "A", TTL: 60, Values: []string{"10.0.0.1", "10.0.0.2"}}},
		{name: "bad name", rs: RecordSet{Name: "Api.example.com", Type: "A", Values: []string{"10.0.0.1"}},
			wantErr: "invalid record set Api.example.com A: name:"},
		{name: "bad type", rs: RecordSet{Name: "api.example.com", Type: "SRV", Values: []string{"x"}}, wantErr: "type:"},
		{name: "bad TTL", rs: RecordSet{Name: "api.example.com", Type: "A", TTL: -1, Values: []string{"10.0.0.1"}},
			wantErr: "TTL: -1 is not between"},
		{name: "no values", rs: RecordSet{Name: "api.example.com", Type: "A"}, wantErr: "at least one value"},
		{name: "not sorted", rs: RecordSet{Name: "api.example.com", Type: "A", Values: []string{"10.0.0.2", "10.0.0.1"}},
			wantErr: "not sorted"},
		{name: "duplicate", rs: RecordSet{Name: "api.example.com", Type: "A", Values: []string{"10.0.0.1", "10.0.0.1"}},
			wantErr: `"10.0.0.1" is listed twice`},
		{name: "two CNAMEs", rs: RecordSet{Name: "api.example.com", Type: "CNAME", Values: []string{"a.example.com", "b.example.com"}},
			wantErr: "exactly one value"},
		{name: "non-canonical value", rs: RecordSet{Name: "api.example.com", Type: "AAAA", Values: []string{"2001:DB8::1"}},
			wantErr: `write "2001:db8::1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, "Validate", tt.rs.Validate(), tt.wantErr)
		})
	}
}

func TestInZone(t *testing.T) {
	for _, tt := range []struct {
		name, zone string
		want       bool
	}{
		{"example.com", "example.com", true},
		{"api.demo.example.com", "example.com", true},
		{"badexample.com", "example.com", false},
		{"example.org", "example.com", false},
	} {
		if got := InZone(tt.name, tt.zone); got != tt.want {
			t.Errorf("InZone(%q, %q) = %v, want %v", tt.name, tt.zone, got, tt.want)
		}
	}
}

func checkErr(t *testing.T, what string, err error, wantErr string) {
	t.Helper()
	switch {
	case wantErr == "" && err != nil:
		t.Errorf("%s: %v", what, err)
	case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
		t.Errorf("%s error = %v, want one containing %q", what, err, wantErr)
	}
}
