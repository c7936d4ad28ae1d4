{{/*
Chart name.
*/}}
{{- define "eventstore.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified app name. With the release name "eventstore" this is
"eventstore" (names: eventstore, eventstore-headless); otherwise
"<release>-eventstore".
*/}}
{{- define "eventstore.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/*
Chart label value.
*/}}
{{- define "eventstore.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Selector labels.
*/}}
{{- define "eventstore.selectorLabels" -}}
app.kubernetes.io/name: {{ include "eventstore.name" . | quote }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
{{- end }}

{{/*
Common labels.
*/}}
{{- define "eventstore.labels" -}}
{{ include "eventstore.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
helm.sh/chart: {{ include "eventstore.chart" . | quote }}
{{- end }}

{{/*
Name of the Secret holding the API token (key "token"):
existingSecret, else "<fullname>-api-token" when token.value is set,
else "eventstore-api-token" (created by the operator).
*/}}
{{- define "eventstore.tokenSecretName" -}}
{{- if .Values.token.existingSecret }}
{{- .Values.token.existingSecret }}
{{- else if .Values.token.value }}
{{- printf "%s-api-token" (include "eventstore.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- "eventstore-api-token" }}
{{- end }}
{{- end }}

{{/*
Container image.
*/}}
{{- define "eventstore.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
Storage backend: "pebble" or "postgres"; anything else fails the render.
*/}}
{{- define "eventstore.backend" -}}
{{- $backend := .Values.storage.backend | default "pebble" }}
{{- if not (has $backend (list "pebble" "postgres")) }}
{{- fail (printf "storage.backend must be pebble or postgres, got %q" $backend) }}
{{- end }}
{{- $backend }}
{{- end }}

{{/*
Name of the Secret holding the PostgreSQL URL (key "url"), in postgres
mode: storage.postgres.existingSecret, else "<fullname>-postgres-url" when
storage.postgres.url is set, else "eventstore-postgres-url" (created by the
operator).
*/}}
{{- define "eventstore.postgresURLSecretName" -}}
{{- if .Values.storage.postgres.existingSecret }}
{{- .Values.storage.postgres.existingSecret }}
{{- else if .Values.storage.postgres.url }}
{{- printf "%s-postgres-url" (include "eventstore.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- "eventstore-postgres-url" }}
{{- end }}
{{- end }}
