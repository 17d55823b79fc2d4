//! v1beta1 <-> v1alpha1, the hub: the two directions of the VirtualMachine
//! conversion (kubebuilder's `virtualmachine_conversion.go`).
//!
//! | v1alpha1 (hub, stored) | v1beta1 (spoke) |
//! |---|---|
//! | `spec.resource.cpu` (a quantity: `2`, `1500m`) | `spec.compute.cpus` (an integer: the quantity rounded up) |
//! | `spec.resource.memory` | `spec.compute.memory` |
//! | `spec.resource.rootDisk` | `spec.rootDisk.size` |
//! | - | `spec.rootDisk.image` |
//! | `status` | `status` (the same types) |
//!
//! Two things do not fit the other version, and travel in an annotation:
//!
//! * v1alpha1 -> v1beta1: a cpu quantity that is not the plain number of CPUs it
//!   rounds up to (`1500m`, `2000m`, `02`) is kept in [`CPU_ANNOTATION`] on the
//!   v1beta1 object; back in v1alpha1 it is the cpu again, unless a v1beta1
//!   client changed `cpus` meanwhile (then the annotation no longer rounds up to
//!   `cpus`, and `cpus` wins).
//! * v1beta1 -> v1alpha1: `rootDisk.image` is kept in
//!   [`ROOT_DISK_IMAGE_ANNOTATION`] on the v1alpha1 object, which is what the API
//!   server stores, so a v1beta1 client reads its image back.
//!
//! Both keys are reserved for the conversion: a client's own value under them
//! is taken as the conversion's.

use super::{Compute, RootDisk, VirtualMachine, VirtualMachineSpec};
use crate::cloudnative::v1alpha1::{self, VirtualMachineResource};
use crate::conversion::{ConversionError, Convertible, Hub, put_annotation, take_annotation};
use crate::quantity;

/// On a v1beta1 VirtualMachine: the v1alpha1 `spec.resource.cpu` it was converted
/// from, when that was not the plain number of `spec.compute.cpus`.
pub const CPU_ANNOTATION: &str = "conversion.cloudnative.tw/v1alpha1-cpu";

/// On a v1alpha1 VirtualMachine: the v1beta1 `spec.rootDisk.image`, which
/// v1alpha1 has no field for.
pub const ROOT_DISK_IMAGE_ANNOTATION: &str = "conversion.cloudnative.tw/v1beta1-root-disk-image";

impl Hub for v1alpha1::VirtualMachine {}

impl Convertible<v1alpha1::VirtualMachine> for VirtualMachine {
    fn convert_to(&self) -> Result<v1alpha1::VirtualMachine, ConversionError> {
        let mut metadata = self.metadata.clone();
        let cpus = self.spec.compute.cpus;
        // The v1alpha1 quantity this came from, if it still says `cpus`.
        let cpu = take_annotation(&mut metadata.annotations, CPU_ANNOTATION)
            .filter(|original| quantity::parse_ceil(original) == Ok(u64::from(cpus)))
            .unwrap_or_else(|| cpus.to_string());
        if let Some(image) = &self.spec.root_disk.image {
            put_annotation(
                &mut metadata.annotations,
                ROOT_DISK_IMAGE_ANNOTATION,
                image.clone(),
            );
        }
        Ok(v1alpha1::VirtualMachine {
            metadata,
            spec: v1alpha1::VirtualMachineSpec {
                resource: VirtualMachineResource::new(
                    cpu,
                    self.spec.compute.memory.0.clone(),
                    self.spec.root_disk.size.0.clone(),
                ),
            },
            status: self.status.clone(),
        })
    }

    fn convert_from(hub: &v1alpha1::VirtualMachine) -> Result<Self, ConversionError> {
        let mut metadata = hub.metadata.clone();
        let resource = &hub.spec.resource;
        let cpus = resource.cpu_cores()?;
        let image = take_annotation(&mut metadata.annotations, ROOT_DISK_IMAGE_ANNOTATION);
        if resource.cpu.0 != cpus.to_string() {
            put_annotation(
                &mut metadata.annotations,
                CPU_ANNOTATION,
                resource.cpu.0.clone(),
            );
        }
        Ok(VirtualMachine {
            metadata,
            spec: VirtualMachineSpec {
                compute: Compute {
                    cpus,
                    memory: resource.memory.clone(),
                },
                root_disk: RootDisk {
                    size: resource.root_disk.clone(),
                    image,
                },
            },
            status: hub.status.clone(),
        })
    }
}
