# The image holds only the binary (see the Dockerfile).
*
!target/release/{{project_name}}
