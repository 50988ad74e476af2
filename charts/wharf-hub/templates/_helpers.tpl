{{/* Names, labels and the pieces several templates share. */}}

{{- define "wharf-hub.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* fullname is kept to 40 characters so that <fullname>-etcd-peers and
     pod names derived from it stay within the 63 of a DNS label. */}}
{{- define "wharf-hub.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "wharf-hub.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "wharf-hub.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "wharf-hub.selectorLabels" -}}
app.kubernetes.io/name: {{ include "wharf-hub.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: hub
{{- end -}}

{{- define "wharf-hub.etcdSelectorLabels" -}}
app.kubernetes.io/name: {{ include "wharf-hub.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: etcd
{{- end -}}

{{- define "wharf-hub.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "wharf-hub.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "wharf-hub.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* peers is the headless Service that gives each hub pod a DNS name. */}}
{{- define "wharf-hub.peers" -}}
{{- printf "%s-peers" (include "wharf-hub.fullname" .) -}}
{{- end -}}

{{- define "wharf-hub.etcdName" -}}
{{- printf "%s-etcd" (include "wharf-hub.fullname" .) -}}
{{- end -}}

{{- define "wharf-hub.etcdPeers" -}}
{{- printf "%s-etcd-peers" (include "wharf-hub.fullname" .) -}}
{{- end -}}

{{- define "wharf-hub.externalURL" -}}
{{- if .Values.externalURL -}}
{{- .Values.externalURL -}}
{{- else -}}
{{- printf "https://%s.%s.svc" (include "wharf-hub.fullname" .) .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{- define "wharf-hub.tlsSecretName" -}}
{{- default (printf "%s-tls" (include "wharf-hub.fullname" .)) .Values.tls.existingSecret -}}
{{- end -}}

{{/* etcdEndpoints are the client URLs the hub connects to. */}}
{{- define "wharf-hub.etcdEndpoints" -}}
{{- if eq .Values.etcd.mode "bundled" -}}
{{- $eps := list -}}
{{- range $i := until (int .Values.etcd.bundled.replicas) -}}
{{- $eps = append $eps (printf "https://%s-%d.%s.%s.svc:2379" (include "wharf-hub.etcdName" $) $i (include "wharf-hub.etcdPeers" $) $.Release.Namespace) -}}
{{- end -}}
{{- join "," $eps -}}
{{- else -}}
{{- join "," .Values.etcd.external.endpoints -}}
{{- end -}}
{{- end -}}

{{/* etcdInitialCluster names every member by its StatefulSet DNS name. */}}
{{- define "wharf-hub.etcdInitialCluster" -}}
{{- $m := list -}}
{{- range $i := until (int .Values.etcd.bundled.replicas) -}}
{{- $n := printf "%s-%d" (include "wharf-hub.etcdName" $) $i -}}
{{- $m = append $m (printf "%s=https://%s.%s.%s.svc:2380" $n $n (include "wharf-hub.etcdPeers" $) $.Release.Namespace) -}}
{{- end -}}
{{- join "," $m -}}
{{- end -}}

{{/* etcdTLSSecret is the Secret with the hub's etcd client certificate. */}}
{{- define "wharf-hub.etcdClientSecret" -}}
{{- if eq .Values.etcd.mode "bundled" -}}
{{- printf "%s-etcd-client-tls" (include "wharf-hub.fullname" .) -}}
{{- else -}}
{{- .Values.etcd.external.tls.secretName -}}
{{- end -}}
{{- end -}}

{{- define "wharf-hub.providerArg" -}}
{{- $bin := printf "/usr/local/bin/wharf-provider-%s" .name -}}
{{- if .sha256 -}}
{{- printf "--provider=%s=%s@sha256:%s" .name $bin .sha256 -}}
{{- else -}}
{{- printf "--provider=%s=%s" .name $bin -}}
{{- end -}}
{{- end -}}

{{/*
wharf-hub.metricsTokenGenerated is "true" when the chart makes the
scraper's token itself: a ServiceMonitor is wanted and no existing
metrics token Secret is named.
*/}}
{{- define "wharf-hub.metricsTokenGenerated" -}}
{{- if and .Values.metrics.serviceMonitor.enabled (empty .Values.metrics.serviceMonitor.bearerTokenSecret.name) -}}true{{- end -}}
{{- end }}

{{/* wharf-hub.metricsTokenSecret is the Secret the chart generates. */}}
{{- define "wharf-hub.metricsTokenSecret" -}}
{{- printf "%s-metrics-token" (include "wharf-hub.fullname" .) -}}
{{- end }}

{{/*
wharf-hub.tokenFileSecret is "name key" of the hub's --token-auth-file:
the operator's auth.tokenAuthSecret, else the generated metrics token
file, else empty.
*/}}
{{- define "wharf-hub.tokenFileSecret" -}}
{{- if .Values.auth.tokenAuthSecret.name -}}
{{- printf "%s %s" .Values.auth.tokenAuthSecret.name .Values.auth.tokenAuthSecret.key -}}
{{- else if include "wharf-hub.metricsTokenGenerated" . -}}
{{- printf "%s tokens.csv" (include "wharf-hub.metricsTokenSecret" .) -}}
{{- end -}}
{{- end }}
