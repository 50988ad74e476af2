// Package pluginpb holds the generated protobuf and gRPC code for the
// provider control protocol. Regenerate with `make generate`; builds never
// need protoc because the output is committed.
package pluginpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative provider.proto
