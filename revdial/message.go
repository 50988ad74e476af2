package revdial

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Control-channel commands. See the package documentation for who sends
// which.
const (
	CmdKeepAlive    = "keep-alive"
	CmdPong         = "pong"
	CmdConnReady    = "conn-ready"
	CmdPickupFailed = "pickup-failed"
)

// MaxControlMessage bounds one control frame. Real messages are a few hundred
// bytes; the bound stops a peer from making the other side buffer without
// limit.
const MaxControlMessage = 64 << 10

// Message is one control-channel message.
type Message struct {
	Command  string `json:"command"`
	ConnPath string `json:"connPath,omitempty"`
	Err      string `json:"err,omitempty"`
}

// errBadMessage is wrapped by every parse failure, so callers can tell a
// protocol violation from an I/O error.
var errBadMessage = errors.New("revdial: malformed control message")

// AppendLine appends m as one newline-terminated JSON line to b.
func (m Message) AppendLine(b []byte) []byte {
	// Message has only string fields, so Marshal cannot fail.
	j, _ := json.Marshal(m)
	b = append(b, j...)
	return append(b, '\n')
}

// ParseMessages decodes a control frame: one or more newline-separated JSON
// objects. Blank lines are skipped. Every line must be a JSON object with a
// non-empty "command"; fields other than the three known ones are ignored.
func ParseMessages(frame []byte) ([]Message, error) {
	if len(frame) > MaxControlMessage {
		return nil, fmt.Errorf("%w: %d bytes exceeds %d", errBadMessage, len(frame), MaxControlMessage)
	}
	var out []Message
	for len(frame) > 0 {
		line := frame
		if i := bytes.IndexByte(frame, '\n'); i >= 0 {
			line, frame = frame[:i], frame[i+1:]
		} else {
			frame = nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		m, err := parseLine(line)
		if err != nil {
			return out, err
		}
		out = append(out, m)
	}
	return out, nil
}

func parseLine(line []byte) (Message, error) {
	// A JSON object only: "null" or an array would otherwise decode into a
	// zero Message without complaint.
	if line[0] != '{' {
		return Message{}, fmt.Errorf("%w: not a JSON object", errBadMessage)
	}
	var m Message
	if err := json.Unmarshal(line, &m); err != nil {
		return Message{}, fmt.Errorf("%w: %w", errBadMessage, err)
	}
	if m.Command == "" {
		return Message{}, fmt.Errorf("%w: missing command", errBadMessage)
	}
	return m, nil
}
