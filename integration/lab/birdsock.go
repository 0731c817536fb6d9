package lab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

const (
	// birdTimeout bounds one exchange when the caller's context has no deadline.
	birdTimeout = 5 * time.Second
	// maxReply bounds what one reply may hold; the lab's tables are tiny, so
	// anything larger means a confused exchange.
	maxReply = 8 << 20
)

// BirdError is a reply of BIRD with an error code (8xxx runtime, 9xxx syntax).
type BirdError struct {
	Code int
	Text string
}

func (e *BirdError) Error() string { return fmt.Sprintf("bird error %04d: %s", e.Code, e.Text) }

// birdExchange sends one command on BIRD's control socket and returns the text
// of the reply lines without their codes, as birdc would print them. The bird/
// package is the real client; this is the minimum the lab needs to wait on.
func birdExchange(ctx context.Context, socket, command string) ([]string, error) {
	if strings.ContainsAny(command, "\r\n") {
		return nil, fmt.Errorf("bird command %q: contains a line break", command)
	}
	ctx, cancel := context.WithTimeout(ctx, birdTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, fmt.Errorf("bird socket %q: %w", socket, err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	if err := conn.SetDeadline(deadline); err != nil {
		return nil, fmt.Errorf("bird socket %q: %w", socket, err)
	}
	// Close the connection when ctx ends early, so a blocked read returns.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	r := bufio.NewReader(io.LimitReader(conn, maxReply))
	if _, err := readReply(r); err != nil {
		return nil, fmt.Errorf("bird socket %q: greeting: %w", socket, err)
	}
	if _, err := io.WriteString(conn, command+"\n"); err != nil {
		return nil, fmt.Errorf("bird socket %q: send %q: %w", socket, command, err)
	}
	lines, err := readReply(r)
	if err != nil {
		return nil, fmt.Errorf("bird socket %q: %q: %w", socket, command, err)
	}
	return lines, nil
}

// readReply reads one reply: lines "NNNN-text" or " text" continue it, a line
// "NNNN text" ends it. An error code ends it with a *BirdError.
func readReply(r *bufio.Reader) ([]string, error) {
	var lines []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		line = strings.TrimSuffix(line, "\n")
		if strings.HasPrefix(line, " ") {
			lines = append(lines, line[1:])
			continue
		}
		if len(line) < 5 || (line[4] != '-' && line[4] != ' ') {
			return nil, fmt.Errorf("malformed reply line %q", line)
		}
		code, err := strconv.Atoi(line[:4])
		if err != nil {
			return nil, fmt.Errorf("malformed reply line %q", line)
		}
		text := line[5:]
		if code >= 8000 {
			return nil, &BirdError{Code: code, Text: text}
		}
		if line[4] == ' ' {
			// The end line carries text only for some replies (e.g. the
			// greeting); "0000 " carries none.
			if text != "" {
				lines = append(lines, text)
			}
			return lines, nil
		}
		lines = append(lines, text)
	}
}
