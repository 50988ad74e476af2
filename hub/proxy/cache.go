package proxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

const (
	// assetCacheControl is short on purpose: provider upgrades must show up
	// within minutes, and "public" is safe because no credential is sent.
	assetCacheControl = "public, max-age=300"
	// errorCacheControl keeps a missing bundle from being pinned by an
	// intermediary (it once was, for hours).
	errorCacheControl = "no-store"
	// maxHashedAsset bounds the memory used to compute an ETag; larger
	// assets stream through without one.
	maxHashedAsset = 8 << 20
)

// cacheAsset sets Cache-Control and ETag on an asset response and answers
// 304 when If-None-Match matches. Provider cookies are dropped: a public,
// cacheable response must not carry one.
func cacheAsset(resp *http.Response) error {
	h := resp.Header
	h.Del("Set-Cookie")
	switch {
	case resp.StatusCode == http.StatusOK:
		h.Set("Cache-Control", assetCacheControl)
	case resp.StatusCode == http.StatusNotModified,
		resp.StatusCode == http.StatusPartialContent:
		h.Set("Cache-Control", assetCacheControl)
		return nil
	default:
		h.Set("Cache-Control", errorCacheControl)
		h.Del("ETag")
		return nil
	}
	if h.Get("ETag") == "" && resp.Request.Method == http.MethodGet {
		if err := hashBody(resp); err != nil {
			return fmt.Errorf("hashing asset body: %w", err)
		}
	}
	if etag := h.Get("ETag"); etag != "" && etagMatches(resp.Request.Header.Get("If-None-Match"), etag) {
		_ = resp.Body.Close()
		resp.Body = http.NoBody
		resp.ContentLength = 0
		resp.StatusCode = http.StatusNotModified
		resp.Status = "304 Not Modified"
		for _, k := range []string{"Content-Length", "Content-Type", "Content-Encoding", "Transfer-Encoding"} {
			h.Del(k)
		}
	}
	return nil
}

// hashBody reads a bounded body and sets a strong ETag from its SHA-256.
// A body over the bound is stitched back together and streamed untagged.
func hashBody(resp *http.Response) error {
	buf, err := io.ReadAll(io.LimitReader(resp.Body, maxHashedAsset+1))
	if err != nil {
		return fmt.Errorf("reading: %w", err)
	}
	if len(buf) > maxHashedAsset {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(buf), resp.Body), resp.Body}
		return nil
	}
	_ = resp.Body.Close()
	sum := sha256.Sum256(buf)
	resp.Header.Set("ETag", `"`+base64.RawURLEncoding.EncodeToString(sum[:])+`"`)
	resp.Body = io.NopCloser(bytes.NewReader(buf))
	resp.ContentLength = int64(len(buf))
	resp.Header.Set("Content-Length", strconv.Itoa(len(buf)))
	resp.Header.Del("Transfer-Encoding")
	return nil
}

// etagMatches is If-None-Match's weak comparison (RFC 9110 13.1.2).
func etagMatches(ifNoneMatch, etag string) bool {
	if ifNoneMatch == "" {
		return false
	}
	want := strings.TrimPrefix(etag, "W/")
	for cand := range strings.SplitSeq(ifNoneMatch, ",") {
		cand = strings.TrimSpace(cand)
		if cand == "*" || strings.TrimPrefix(cand, "W/") == want {
			return true
		}
	}
	return false
}
