package h2guard

// instructions counts the HPACK representations (RFC 7541, 6) of a
// header block as its bytes arrive, whatever the chunks: each costs the
// server's decoder a step whether or not it yields a field. A dynamic
// table size update yields none, and Go's decoder takes any number of
// them while its table is empty: a block of them decodes to nothing at
// ~30 ns a byte, three times a literal's cost, so wire and decoded bytes
// alone undercharge it. Strings are skipped, never copied.
type instructions struct {
	n     int64 // representations begun in this block
	state int
	next  int    // the state after an index integer
	strs  int    // strings of this representation still to come
	skip  uint64 // string bytes still to skip
	acc   uint64 // a string length being read
	shift uint
}

const (
	sFirst   = iota // a representation's first byte
	sIndex          // an index or size integer's continuation bytes
	sStrLen         // a string's length prefix
	sStrCont        // its continuation bytes
	sStrBody        // its bytes
)

func (s *instructions) reset() { *s = instructions{} }

// scan takes the next bytes of the block.
func (s *instructions) scan(b []byte) {
	for len(b) > 0 {
		switch s.state {
		case sFirst:
			c := b[0]
			b = b[1:]
			s.n++
			var idx, max byte
			switch {
			case c&0x80 != 0: // indexed field
				idx, max, s.strs = c&0x7f, 0x7f, 0
			case c&0xc0 == 0x40: // literal, incremental indexing
				idx, max = c&0x3f, 0x3f
				s.strs = 1 + b2i(idx == 0)
			case c&0xe0 == 0x20: // dynamic table size update
				idx, max, s.strs = c&0x1f, 0x1f, 0
			default: // literal without indexing or never indexed
				idx, max = c&0x0f, 0x0f
				s.strs = 1 + b2i(idx == 0)
			}
			s.next = sFirst
			if s.strs > 0 {
				s.next = sStrLen
			}
			s.state = s.next
			if idx == max {
				s.state = sIndex
			}
		case sIndex:
			c := b[0]
			b = b[1:]
			if c&0x80 == 0 {
				s.state = s.next
			}
		case sStrLen:
			c := b[0]
			b = b[1:]
			if v := c & 0x7f; v == 0x7f {
				s.acc, s.shift, s.state = 0x7f, 0, sStrCont
			} else {
				s.startString(uint64(v))
			}
		case sStrCont:
			c := b[0]
			b = b[1:]
			if s.shift < 63 {
				s.acc += uint64(c&0x7f) << s.shift
			}
			s.shift += 7
			if c&0x80 == 0 {
				s.startString(s.acc)
			}
		case sStrBody:
			n := uint64(len(b))
			if n > s.skip {
				n = s.skip
			}
			s.skip -= n
			b = b[n:]
			if s.skip == 0 {
				s.endString()
			}
		}
	}
}

func (s *instructions) startString(n uint64) {
	s.skip, s.state = n, sStrBody
	if n == 0 {
		s.endString()
	}
}

func (s *instructions) endString() {
	s.strs--
	s.state = sFirst
	if s.strs > 0 {
		s.state = sStrLen
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
