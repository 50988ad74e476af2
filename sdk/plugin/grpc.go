package plugin

import (
	"context"
	"errors"
	"fmt"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/wharfhub/wharf/sdk/plugin/pluginpb"
)

// Server is the plugin side of the control protocol. Package sdk implements
// it on top of a provider; tests and the sdk testkit call it directly to run
// the exact same lifecycle without a process boundary.
type Server interface {
	Describe(ctx context.Context) (*Descriptor, error)
	Start(ctx context.Context, cfg *Config) error
	Health(ctx context.Context) error
	Stop(ctx context.Context) error
}

// Serve runs srv as a go-plugin gRPC plugin and blocks until the hub closes
// the connection or kills the process. Call it from main.
func Serve(srv Server) {
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         pluginMap(srv),
		GRPCServer:      goplugin.DefaultGRPCServer,
	})
}

func pluginMap(srv Server) goplugin.PluginSet {
	return goplugin.PluginSet{PluginName: &grpcPlugin{srv: srv}}
}

// grpcPlugin glues Server to go-plugin. It only supports gRPC: net/rpc would
// re-encode everything through gob, and HTTP never travels this way anyway.
type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	srv Server // nil on the host side
}

func (p *grpcPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pluginpb.RegisterProviderServer(s, &grpcServer{srv: p.srv})
	return nil
}

func (p *grpcPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &grpcClient{c: pluginpb.NewProviderClient(c)}, nil
}

// grpcServer adapts Server to the generated service.
type grpcServer struct {
	pluginpb.UnimplementedProviderServer
	srv Server
}

func (s *grpcServer) Describe(ctx context.Context, _ *pluginpb.DescribeRequest) (*pluginpb.DescribeResponse, error) {
	d, err := s.srv.Describe(ctx)
	if err != nil {
		return nil, err
	}
	m, err := descriptorToPB(d)
	if err != nil {
		return nil, err
	}
	return &pluginpb.DescribeResponse{Manifest: m}, nil
}

func (s *grpcServer) Start(ctx context.Context, req *pluginpb.StartRequest) (*pluginpb.StartResponse, error) {
	if err := s.srv.Start(ctx, configFromPB(req)); err != nil {
		return nil, err
	}
	return &pluginpb.StartResponse{}, nil
}

func (s *grpcServer) Health(ctx context.Context, _ *pluginpb.HealthRequest) (*pluginpb.HealthResponse, error) {
	// Unhealthy is an answer, not an RPC failure: the hub must tell "plugin
	// says it is sick" apart from "plugin is gone".
	if err := s.srv.Health(ctx); err != nil {
		return &pluginpb.HealthResponse{Healthy: false, Message: err.Error()}, nil
	}
	return &pluginpb.HealthResponse{Healthy: true}, nil
}

func (s *grpcServer) Stop(ctx context.Context, _ *pluginpb.StopRequest) (*pluginpb.StopResponse, error) {
	if err := s.srv.Stop(ctx); err != nil {
		return nil, err
	}
	return &pluginpb.StopResponse{}, nil
}

// grpcClient is the host's view of the plugin, as a Server.
type grpcClient struct {
	c pluginpb.ProviderClient
}

func (c *grpcClient) Describe(ctx context.Context) (*Descriptor, error) {
	resp, err := c.c.Describe(ctx, &pluginpb.DescribeRequest{})
	if err != nil {
		return nil, fmt.Errorf("describe: %w", err)
	}
	return descriptorFromPB(resp.GetManifest()), nil
}

func (c *grpcClient) Start(ctx context.Context, cfg *Config) error {
	if cfg == nil {
		return errors.New("start: nil config")
	}
	if _, err := c.c.Start(ctx, configToPB(cfg)); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	return nil
}

func (c *grpcClient) Health(ctx context.Context) error {
	resp, err := c.c.Health(ctx, &pluginpb.HealthRequest{})
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	if !resp.GetHealthy() {
		return fmt.Errorf("%w: %s", ErrUnhealthy, resp.GetMessage())
	}
	return nil
}

func (c *grpcClient) Stop(ctx context.Context) error {
	if _, err := c.c.Stop(ctx, &pluginpb.StopRequest{}); err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	return nil
}
