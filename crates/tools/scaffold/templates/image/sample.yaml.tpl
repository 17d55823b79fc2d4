// TODO template image/sample.yaml.tpl
