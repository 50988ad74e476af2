// Package plugins is the hub's provider plugin host: it turns the
// --provider, --provider-dir and --provider-config flags ([Options]) into
// running, supervised provider processes ([Host]) built with package sdk,
// and tells the rest of the hub how each one is doing.
//
// # Wiring
//
//	specs, _ := opts.Specs()               // after opts.Validate()
//	configs, _ := opts.ProviderConfigs()
//	h, err := plugins.New(plugins.Config{DataDir: dataDir, HubURL: url,
//		RestConfig: mint, Specs: specs, ProviderConfigs: configs,
//		Supervision: opts.Supervision})
//	go h.Run(ctx)  // wait for it to return before the hub exits
//
// Proxies call [Host.Transport] per request; the catalog reads [Host.List]
// whenever [Host.Subscribe]'s channel fires.
//
// # Supervision guarantees
//
//   - Each provider gets its own goroutine; nothing a plugin does (crash,
//     hang, garbage manifest, exit in Start) fails [Host.Run] or affects
//     another provider.
//   - Start is: launch (go-plugin handshake, gRPC only), Describe, check the
//     manifest validates and its name equals the configured one, then Start
//     with the hub URL, credentials, data dir and config. The whole sequence
//     is bounded by the start timeout.
//   - A running plugin is checked for process exit every ExitPoll and
//     health-pinged every HealthInterval; an exit, or HealthFailures
//     consecutive failed pings, means kill the process group and restart.
//   - Restarts wait a full-jitter exponential backoff, uniform in
//     [0, min(BackoffMax, BackoffInitial·2^n)] (1s→30s by default); n resets
//     once a plugin has run for StableAfter.
//   - Configuration errors (missing binary, checksum mismatch, name
//     mismatch, invalid manifest, unusable socket path) are StateFailed and
//     not retried: the same binary would give the same answer.
//   - The transport is withdrawn before a plugin is killed, so callers see
//     "not running" (and answer 503) rather than a dial error.
//   - When Run's ctx is done, every plugin gets Stop (bounded by
//     StopTimeout, on a context that outlives the hub's) and then its whole
//     process group is SIGKILLed; Run returns only after that. If the hub is
//     itself killed, the SDK's parent-death signal and parent polling end
//     the plugin.
//   - Plugin stdout and stderr reach the hub's structured log one line per
//     entry, with key provider=<name>.
//   - With Config.Gate (several hub replicas), each provider is launched
//     once to read its manifest. A replicas: single provider is then
//     killed at once and sits in StateStandby; it is started only while
//     the Gate says this replica holds it, and stopped (Stop, then the
//     group kill) before the Gate may hand it to another replica.
//     [Host.Holder] and Status.Holder name the replica that holds it.
//     [Host.Handover], called when the hub starts draining, stops this
//     replica's single providers and gives their right up at once, then
//     follows the new holder (Observer) while the others keep running.
//
// # Threat model
//
// A provider binary is trusted code the operator chose: it runs as the
// hub's user. What the host defends against is the wrong code running, or
// the right code being reached or fed by the wrong party:
//
//   - Binary integrity: with name=path@sha256:<hex>, go-plugin hashes the
//     file and refuses to exec it on mismatch, so a swapped binary does not
//     run. (The check and the exec are separate steps, so the directory
//     holding the binary must not be writable by others.) --provider-dir
//     entries carry no checksum: the directory is the trust boundary there.
//   - Socket privacy: the plugin's HTTP socket and go-plugin's control
//     socket live in <data-dir>/plugins/<name>/, and that directory and its
//     parent are forced to mode 0700 at every start. The plugin trusts the
//     X-Kedge-* identity headers only because no other local user can
//     connect to that socket; the SDK refuses a socket dir that is not 0700.
//   - Socket hygiene: a killed or crashed plugin cannot unlink its
//     sockets, and go-plugin names its control socket anew at each run, so
//     the host removes them itself: at start for every earlier run (also
//     of providers no longer configured), before each launch, and after
//     each stop or restart, always once the provider's process group is
//     dead. It deletes only sockets, only directly inside its own
//     directories (real directories, mode 0700, owned by the hub's user;
//     anything else is left alone), and never follows a symlink, so a
//     planted link cannot steer the deletion at someone else's files.
//   - Environment isolation: plugins start with IsolateEnv and only the
//     variables in Config.PassEnv ([DefaultPassEnv]: PATH, HOME, TMPDIR,
//     locale, time zone, TLS roots), so hub secrets held in environment
//     variables (etcd, OIDC, cloud credentials, proxy URLs with passwords)
//     are not inherited. What a provider may know arrives explicitly at
//     Start: its own credentials and its own config file.
//   - Per-provider state: each provider gets <data-dir>/providers/<name>
//     (0700) and is told nothing about the others' directories.
package plugins
