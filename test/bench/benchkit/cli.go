package benchkit

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"
)

// Command is the frame shared by the benchmark commands: the -bin and
// -timeout flags, validation, signal handling, exit codes and the total
// time line.
type Command struct {
	Name    string        // prefix of error messages, e.g. "hub bench"
	Bin     string        // -bin: path of the wharf-hub binary
	Timeout time.Duration // -timeout: overall time limit
}

// RegisterFlags registers -bin and -timeout, the latter defaulting to
// timeout, on flag.CommandLine.
func (c *Command) RegisterFlags(timeout time.Duration) {
	flag.StringVar(&c.Bin, "bin", "bin/wharf-hub", "path of the wharf-hub binary")
	flag.DurationVar(&c.Timeout, "timeout", timeout, "overall time limit")
}

// Main runs the command after flag.Parse. If -bin is empty or validate
// fails it prints the error and the usage and exits 2. Otherwise it checks
// that -bin exists and calls run with a context that ends on SIGINT or after
// -timeout; then it prints the total time, or prints run's error and exits 1.
func (c *Command) Main(validate func() error, run func(ctx context.Context) error) {
	invalid := validate()
	if c.Bin == "" {
		invalid = errors.New("-bin is required")
	}
	if invalid != nil {
		fmt.Fprintln(os.Stderr, c.Name+":", invalid)
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	if err := c.run(ctx, run); err != nil {
		fmt.Fprintln(os.Stderr, c.Name+":", err)
		cancel()
		stop()
		os.Exit(1)
	}
}

func (c *Command) run(ctx context.Context, run func(ctx context.Context) error) error {
	if _, err := os.Stat(c.Bin); err != nil {
		return fmt.Errorf("hub binary: %w", err)
	}
	start := time.Now()
	if err := run(ctx); err != nil {
		return err
	}
	fmt.Printf("total benchmark time: %s\n", time.Since(start).Round(time.Second))
	return nil
}

// Progress logs a timestamped progress line to stderr.
func Progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// Sec returns d in seconds.
func Sec(d time.Duration) float64 { return d.Seconds() }

// Ms returns d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Rate returns n per second of d, or 0 if d is not positive.
func Rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Div returns a/b, or 0 if b is not positive.
func Div(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}
