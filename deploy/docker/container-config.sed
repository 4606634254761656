# Applied by the Dockerfile to the distribution's conf/idem.yaml (sed -f): the image's only changes to it.
# In a container the health and metrics port must listen on every interface, or neither a published port
# (docker run -p 9464:9464) nor a probe from outside reaches it; the shipped default is 127.0.0.1.
# IDEM_HTTP_HOST and IDEM_HTTP_PORT override both at run time; bin/idem-healthcheck reads IDEM_HTTP_PORT too.
# DockerfileIT checks that each line below matches in the built conf/idem.yaml and that the result is valid.
s/^  # http\.host: 127\.0\.0\.1$/  http.host: ${IDEM_HTTP_HOST:-0.0.0.0}/
s/^  # http\.port: 9464$/  http.port: ${IDEM_HTTP_PORT:-9464}/
