package edges

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/wharfhub/wharf/test/procnet"
)

// soAcceptCon is __SO_ACCEPTCON in /proc/net/unix's Flags column: the
// socket is listening.
const soAcceptCon = 0x10000

// listeningSockets lists what process pid listens on: TCP ports (v4, v6,
// from test/procnet) and listening unix sockets among its descriptors.
func listeningSockets(pid int) ([]string, error) {
	ports, err := procnet.ListeningTCPPorts(pid)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range ports {
		out = append(out, fmt.Sprintf("tcp:%d", p))
	}
	inodes := map[string]bool{}
	fds, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	if err != nil {
		return nil, err
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", fd.Name()))
		if err != nil {
			continue
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "net", "unix"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header: Num RefCount Protocol Flags Type St Inode Path
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 7 || !inodes[fields[6]] {
			continue
		}
		flags, err := strconv.ParseUint(fields[3], 16, 32)
		if err == nil && flags&soAcceptCon != 0 {
			path := ""
			if len(fields) > 7 {
				path = fields[7]
			}
			out = append(out, "unix:"+path)
		}
	}
	return out, sc.Err()
}
