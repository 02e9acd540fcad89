{{/* Name of the chart, overridable. */}}
{{- define "gitmesh-agent.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Full name: the release name when it already contains the chart name. */}}
{{- define "gitmesh-agent.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "gitmesh-agent.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gitmesh-agent.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "gitmesh-agent.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "gitmesh-agent.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: gitmesh
{{- end -}}

{{- define "gitmesh-agent.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "gitmesh-agent.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "gitmesh-agent.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The required relay values, checked once with a message saying what to set. */}}
{{- define "gitmesh-agent.serverAddress" -}}
{{- required "relay.serverAddress is required: the management server's relay address, host:port (e.g. --set relay.serverAddress=gitmesh.example.com:9900)" .Values.relay.serverAddress -}}
{{- end -}}
{{- define "gitmesh-agent.cluster" -}}
{{- required "relay.cluster is required: this cluster's name, equal to its KubernetesCluster in the configuration repository (e.g. --set relay.cluster=cluster1)" .Values.relay.cluster -}}
{{- end -}}
