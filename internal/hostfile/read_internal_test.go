package hostfile

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"
)

// TestReadAtMost: whatever size the file said (less, more, nothing), the
// whole content is read, and never more than the limit.
func TestReadAtMost(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 100) // 1000 bytes
	for _, c := range []struct {
		size, limit int64
		want        int
	}{
		{1000, 2000, 1000}, // the size said
		{10, 2000, 1000},   // grew after the stat
		{0, 2000, 1000},    // said nothing
		{5000, 2000, 1000}, // shrank
		{1000, 1000, 1000}, // exactly the limit
		{1000, 999, 999},   // cut at the limit
		{0, 1, 1},
	} {
		for name, rd := range map[string]io.Reader{
			"whole":              bytes.NewReader(data),
			"one byte at a time": iotest.OneByteReader(bytes.NewReader(data)),
			"data with EOF":      iotest.DataErrReader(bytes.NewReader(data)),
		} {
			b, err := readAtMost(rd, c.size, c.limit)
			if err != nil || len(b) != c.want || !bytes.Equal(b, data[:c.want]) {
				t.Errorf("%s, size %d, limit %d: %d bytes, %v; want %d", name, c.size, c.limit, len(b), err, c.want)
			}
		}
	}
}
