package mountinfo

import "testing"

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`/mnt/plain`:            `/mnt/plain`,
		`/mnt/with\040space`:    `/mnt/with space`,
		`/mnt/tab\011and\012nl`: "/mnt/tab\tand\nnl",
		`/mnt/back\134slash`:    `/mnt/back\slash`,
		`/mnt/short\04`:         `/mnt/short\04`, // not three digits: kept as it is
		`/mnt/not\999octal`:     `/mnt/not\999octal`,
		`/mnt/end\040`:          `/mnt/end `,
	} {
		if got := Unescape(in); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", in, got, want)
		}
	}
}
