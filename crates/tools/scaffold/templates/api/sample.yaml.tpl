// TODO template api/sample.yaml.tpl
