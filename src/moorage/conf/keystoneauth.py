"""keystoneauth1's options in a group of ours, as nova registers them in its ``[placement]``
and ``[glance]``: how a Moorage service or command reaches another OpenStack service.

Three families, all keystoneauth1's own definitions (so the names, types and help are
the ones operators know from nova.conf):

- the session's: ``cafile``, ``certfile``, ``keyfile``, ``insecure``, ``timeout``...;
- the adapter's: ``service_type``, ``valid_interfaces``, ``region_name``,
  ``endpoint_override``...;
- the auth plugin's: ``auth_type`` and ``auth_section``, then the chosen plugin's own
  (``auth_url``, ``username``, ``password``, ``application_credential_id``...), which
  keystoneauth1 registers when it loads the plugin. ``password``'s are listed in the
  reference and the sample (``plugin_options``), as nova lists them.

With ``auth_type`` unset, the group is in the DEVELOPMENT mode of ours: the fixed
token of the group's ``token`` option to ``endpoint_override`` (moorage.service_auth).
"""

from __future__ import annotations

from keystoneauth1 import loading
from keystoneauth1 import plugin as plugin_base
from oslo_config import cfg

# The plugin the reference and the sample list the options of (nova's choice).
LISTED_PLUGIN = "password"


def options(service_type: str, interfaces: list[str]) -> list[cfg.Opt]:
    """The session, adapter and auth-plugin-choice options, with ``service_type`` and
    ``valid_interfaces`` defaulting to the service's (what nova sets for placement)."""
    adapter = loading.get_adapter_conf_options(include_deprecated=False)
    for opt in adapter:
        if opt.dest == "service_type":
            opt.default = service_type
        elif opt.dest == "valid_interfaces":
            opt.default = list(interfaces)
    return [*loading.get_session_conf_options(), *adapter,
            *loading.get_auth_common_conf_options()]


def plugin_options() -> list[cfg.Opt]:
    """The options of the ``password`` plugin, for the reference and the sample only:
    keystoneauth1 registers those of the configured plugin when it loads it."""
    return list(loading.get_auth_plugin_conf_options(LISTED_PLUGIN))


def register_plugin_options(conf: cfg.ConfigOpts, group: str) -> None:
    """Register the options of the plugin ``[group] auth_type`` names (``auth_url``,
    ``username``...), so that they can be read, checked and overridden before
    keystoneauth1 loads the plugin. ValueError (one line) for a plugin that does not
    exist."""
    name = conf[group].auth_type
    if not name:
        return
    try:
        plugin: loading.BaseLoader[plugin_base.BaseAuthPlugin] = loading.get_plugin_loader(name)
    except Exception:  # keystoneauth1's NoMatchingPlugin
        allowed = ", ".join(sorted(loading.get_available_plugin_names()))
        raise ValueError(f"[{group}] auth_type = {name}: no such keystoneauth1 plugin; "
                         f"allowed: {allowed}") from None
    conf.register_opts([opt._to_oslo_opt() for opt in plugin.get_options()], group=group)
