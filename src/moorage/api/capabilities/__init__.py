"""The capability catalogue: what the cloud offers its users, as standard traits.

Upstream's image-metadata-prefiltering spec, use case 2: a user who brings an image
that needs an e1000 NIC or UEFI secure boot should be able to learn that the cloud
offers it, without the operator revealing which hosts, or which software versions,
provide it.

  families.py   the trait families users see (os-traits prefixes), titles and labels
  properties.py image properties -> the traits they require, from the request filters
  census.py     per trait: how many enabled, up hosts offer it, their free capacity
                (read from placement in one request, kept for a few seconds)
  catalogue.py  census + floor -> what may be shown (pure); its JSON shape
  page.py       the same catalogue as one self-contained HTML page
"""
