package plugin

import (
	"errors"
	"fmt"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/wharfhub/wharf/sdk/plugin/pluginpb"
)

const (
	// ProtocolVersion is the application protocol version negotiated in the
	// go-plugin handshake. Bump it on any incompatible proto change.
	ProtocolVersion = 1

	// PluginName is the single entry in the go-plugin plugin map.
	PluginName = "provider"

	// UIPrefix is where the plugin serves its UI on the socket. The hub maps
	// /ui/providers/<name>/X to UIPrefix+X.
	UIPrefix = "/ui/"

	// BackendPrefix is where the plugin serves its backend on the socket. The
	// hub maps /services/providers/<name>/X to BackendPrefix+X.
	BackendPrefix = "/services/"
)

// Handshake is shared by hub and plugin. The cookie is not security (the
// checksum is); it stops a user from running a provider binary by hand and
// makes a wrong binary fail fast instead of hanging on stdin.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "WHARF_PROVIDER_PLUGIN",
	MagicCookieValue: "5c1f0e0b-wharf-provider-v1",
}

// Replicas says how many hub replicas may run a provider at once.
type Replicas string

const (
	// ReplicasAny lets every hub replica run its own instance.
	ReplicasAny Replicas = "Any"
	// ReplicasSingle keeps exactly one instance across all hub replicas, for
	// providers holding in-process state such as revdial tunnels.
	ReplicasSingle Replicas = "Single"
)

// Descriptor is the data part of a provider's manifest, as the hub sees it
// after Describe. Handlers stay in the plugin process.
type Descriptor struct {
	Name            string
	DisplayName     string
	Version         string
	Description     string
	Icon            string
	Category        string
	Replicas        Replicas
	EdgeProxyAccess bool
	PublicPaths     []string
	// CRDs holds one CustomResourceDefinition per entry, encoded as JSON.
	CRDs       [][]byte
	HasUI      bool
	HasBackend bool
}

// RestConfig is the wire form of the provider's own credentials. It is kept
// free of client-go so the hub decides how to build clients from it.
type RestConfig struct {
	Host        string
	BearerToken string
	CAData      []byte
	CertData    []byte
	KeyData     []byte
	ServerName  string
	Insecure    bool
}

// Config is what the hub hands the provider at Start.
type Config struct {
	// HubURL is the hub's internal URL, the base for /clusters/<workspace>.
	HubURL string
	// RestConfig is the provider's own identity against the hub.
	RestConfig RestConfig
	// DataDir is a directory the provider may keep state in.
	DataDir string
	// ProviderConfig is the operator's config file for this provider, as-is.
	ProviderConfig []byte
	// SocketPath is where the plugin must serve HTTP. Its directory must
	// exist with mode 0700.
	SocketPath string
}

// ErrUnhealthy is returned by [Client.Health] when the plugin answers but
// reports itself unhealthy.
var ErrUnhealthy = errors.New("provider unhealthy")

func replicasToPB(r Replicas) (pluginpb.Replicas, error) {
	switch r {
	case "", ReplicasAny:
		return pluginpb.Replicas_REPLICAS_ANY, nil
	case ReplicasSingle:
		return pluginpb.Replicas_REPLICAS_SINGLE, nil
	}
	return 0, fmt.Errorf("unknown replicas %q (want %q or %q)", r, ReplicasAny, ReplicasSingle)
}

func replicasFromPB(r pluginpb.Replicas) Replicas {
	if r == pluginpb.Replicas_REPLICAS_SINGLE {
		return ReplicasSingle
	}
	// Unspecified means Any: an older plugin that predates the field can
	// only be stateless.
	return ReplicasAny
}

func descriptorToPB(d *Descriptor) (*pluginpb.Manifest, error) {
	r, err := replicasToPB(d.Replicas)
	if err != nil {
		return nil, err
	}
	return &pluginpb.Manifest{
		Name:            d.Name,
		DisplayName:     d.DisplayName,
		Version:         d.Version,
		Description:     d.Description,
		Icon:            d.Icon,
		Category:        d.Category,
		Replicas:        r,
		EdgeProxyAccess: d.EdgeProxyAccess,
		PublicPaths:     d.PublicPaths,
		Crds:            d.CRDs,
		HasUi:           d.HasUI,
		HasBackend:      d.HasBackend,
	}, nil
}

func descriptorFromPB(m *pluginpb.Manifest) *Descriptor {
	if m == nil {
		return &Descriptor{Replicas: ReplicasAny}
	}
	return &Descriptor{
		Name:            m.GetName(),
		DisplayName:     m.GetDisplayName(),
		Version:         m.GetVersion(),
		Description:     m.GetDescription(),
		Icon:            m.GetIcon(),
		Category:        m.GetCategory(),
		Replicas:        replicasFromPB(m.GetReplicas()),
		EdgeProxyAccess: m.GetEdgeProxyAccess(),
		PublicPaths:     m.GetPublicPaths(),
		CRDs:            m.GetCrds(),
		HasUI:           m.GetHasUi(),
		HasBackend:      m.GetHasBackend(),
	}
}

func configToPB(c *Config) *pluginpb.StartRequest {
	rc := c.RestConfig
	return &pluginpb.StartRequest{
		HubUrl: c.HubURL,
		RestConfig: &pluginpb.RestConfig{
			Host:        rc.Host,
			BearerToken: rc.BearerToken,
			CaData:      rc.CAData,
			CertData:    rc.CertData,
			KeyData:     rc.KeyData,
			ServerName:  rc.ServerName,
			Insecure:    rc.Insecure,
		},
		DataDir:        c.DataDir,
		ProviderConfig: c.ProviderConfig,
		SocketPath:     c.SocketPath,
	}
}

func configFromPB(r *pluginpb.StartRequest) *Config {
	rc := r.GetRestConfig()
	return &Config{
		HubURL: r.GetHubUrl(),
		RestConfig: RestConfig{
			Host:        rc.GetHost(),
			BearerToken: rc.GetBearerToken(),
			CAData:      rc.GetCaData(),
			CertData:    rc.GetCertData(),
			KeyData:     rc.GetKeyData(),
			ServerName:  rc.GetServerName(),
			Insecure:    rc.GetInsecure(),
		},
		DataDir:        r.GetDataDir(),
		ProviderConfig: r.GetProviderConfig(),
		SocketPath:     r.GetSocketPath(),
	}
}
